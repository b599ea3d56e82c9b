package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/lockfault/lockfault/adapters/k8sjob"
)

// emitK8s prints a campaign's ConfigMap and Indexed Job as YAML.
func emitK8s(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("emit-k8s", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o k8sjob.Options
	fs.StringVar(&o.DefinitionFile, "def", "", "the campaign definition (YAML); checked here and put in the ConfigMap")
	fs.StringVar(&o.Name, "name", "lockfault", "the Job's name (a DNS-1123 label of at most 52 characters)")
	fs.StringVar(&o.Namespace, "namespace", "", "the namespace (default: the context's)")
	fs.StringVar(&o.Image, "image", "", "an image with simulate, redis-server, redis-sentinel, etcd and /bin/sh (required)")
	fs.IntVar(&o.Shards, "shards", 0, "N: one pod per shard (1 to 1000)")
	fs.IntVar(&o.Parallelism, "parallelism", 0, "shards at once (default: all)")
	fs.IntVar(&o.RunsPerPod, "runs-per-pod", 1, "simulate campaign's -parallel in each pod")
	fs.StringVar(&o.ResultsClaim, "results-claim", "", "the PersistentVolumeClaim the shards write into (required)")
	fs.StringVar(&o.CPU, "cpu", "", "each pod's CPU request (default 2)")
	fs.StringVar(&o.Memory, "memory", "", "each pod's memory request and limit (default 2Gi)")
	fs.IntVar(&o.RetriesPerShard, "retries", 0, "how often a failed shard starts again (default 2)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "lockfault-ext emit-k8s: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	out, err := k8sjob.YAML(o)
	if err != nil {
		fmt.Fprintln(stderr, "lockfault-ext emit-k8s:", err)
		return 2
	}
	stdout.Write(out)
	return 0
}
