package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/cluster/docker"
	"github.com/lockfault/lockfault/internal/cgroup"
)

func cmdClean(args []string, stdout, stderr io.Writer) int {
	f := newFlags("clean", "", stdout, stderr)
	if code, ok := f.noArgs(args); !ok {
		return code
	}
	ctx := context.Background()
	var errs []error
	if docker.DockerAvailable(ctx) {
		n, err := docker.CleanDocker(ctx)
		errs = append(errs, err)
		fmt.Fprintf(stdout, "removed %d docker object(s) labelled %s\n", n, cluster.LabelApp)
	}
	n, err := cluster.CleanTemp()
	errs = append(errs, err)
	fmt.Fprintf(stdout, "removed %d temp dir(s)\n", n)
	n, err = cgroup.Clean()
	errs = append(errs, err)
	fmt.Fprintf(stdout, "removed %d worker cgroup(s) of dead runs\n", n)
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	return 0
}
