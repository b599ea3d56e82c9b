// Command lockfault-ext runs what lockfault keeps out of its own module
// (so that a module importing lockfaulttest keeps its own versions of these
// libraries): started by the harness with LOCKFAULT_ROLE=worker it speaks
// the worker protocol (docs/PROTOCOL.md) for any of the published Go lock
// libraries' locks (package golibs); `lockfault-ext list` prints their
// descriptions (lockimpl.Info, with each library's exact module version) as
// a JSON array; `lockfault-ext emit-k8s` prints a campaign's Kubernetes
// Indexed Job (package k8sjob), as `simulate campaign -emit k8s` asks.
//
//	simulate run -backend process -worker 'bin/lockfault-ext' -lock rueidislock SCENARIO
//	simulate suite -backend process -worker 'bin/lockfault-ext' -lock go-zero
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/lockfault/lockfault/adapters/golibs"
	"github.com/lockfault/lockfault/worker"
)

const usage = "usage: lockfault-ext list | emit-k8s [flags]    (as a worker: LOCKFAULT_ROLE=worker lockfault-ext)"

func main() {
	if worker.IsWorker() {
		worker.Main()
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command line outside the worker role.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "emit-k8s" {
		return emitK8s(args[1:], stdout, stderr)
	}
	if len(args) != 1 || args[0] != "list" {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(golibs.Infos()); err != nil {
		fmt.Fprintln(stderr, "lockfault-ext:", err)
		return 1
	}
	return 0
}
