package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/workercheck"
)

// cmdWorkerCheck holds a worker to every rule of docs/PROTOCOL.md.
func cmdWorkerCheck(args []string, stdout, stderr io.Writer) int {
	f := newFlags("worker-check", "", stdout, stderr)
	workerLine := f.String("worker", "", "the worker command (split like a shell would; no shell runs it); default: lockfault's own worker, with -lock")
	lock := f.String("lock", "", "the lock name init asks for (default: the one the worker declares)")
	only := f.String("run", "", "comma-separated check ids, or prefixes ending in / (default: every check)")
	asJSON := f.Bool("json", false, "print the report as JSON")
	verbose := f.Bool("v", false, "pass the worker's stderr through")
	if code, ok := f.noArgs(args); !ok {
		return code
	}
	var argv []string
	if *workerLine != "" {
		var err error
		if argv, err = runner.SplitCommand(*workerLine); err != nil {
			return f.fail("-worker: %v", err)
		}
	} else {
		if *lock == "" {
			return f.fail("-worker: missing (or -lock NAME to check lockfault's own worker)")
		}
		self, err := os.Executable()
		if err != nil {
			return f.fail("%v", err)
		}
		argv = []string{self}
	}
	opts := workercheck.Options{Lock: *lock, Only: list(*only)}
	if *verbose {
		opts.Stderr = stderr
	}
	ctx, stop := interruptible()
	defer stop()
	rep, err := workercheck.Run(ctx, argv, opts)
	if err != nil {
		return f.fail("%v", err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		fmt.Fprint(stdout, rep.Text())
	}
	return rep.ExitCode()
}
