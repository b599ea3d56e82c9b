package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/lockfault/lockfault/faults"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/scenarios"
)

func cmdList(args []string, stdout, stderr io.Writer) int {
	f := newFlags("list", "", stdout, stderr)
	if code, ok := f.noArgs(args); !ok {
		return code
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tCLAIM\tLOCK\tEXPECT")
	for _, n := range scenarios.Names() {
		sc, err := scenarios.Load(n)
		if err != nil {
			fmt.Fprintf(tw, "%s\t(invalid: %v)\n", n, err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n, sc.Claim, sc.Lock.Name, strings.Join(sc.Expect, ","))
	}
	fmt.Fprintln(tw, "\nLOCK\tNEEDS\tVERSION\tPROMISES")
	for _, n := range lockimpl.Names() {
		i, _ := lockimpl.Lookup(n)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n, i.Needs, orDash(i.Version), i.Promises)
	}
	ext, err := runner.ExtLocks(context.Background())
	for _, i := range ext {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", i.Name, i.Needs, orDash(i.Version), i.Promises)
	}
	if err != nil || runner.ExtWorker() == "" {
		fmt.Fprintf(tw, "(the published libraries' locks are served by lockfault-ext: %s)\n", extNote(err))
	}
	fmt.Fprintln(tw, "\nFAULT\tTARGET\tDESCRIPTION")
	for _, fi := range faults.All() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", fi.Name, fi.Targets, fi.Description)
	}
	tw.Flush()
	return 0
}

func extNote(err error) string {
	if err != nil {
		return err.Error()
	}
	return "not built; `make build` builds bin/lockfault-ext"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
