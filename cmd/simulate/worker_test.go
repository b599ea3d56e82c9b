package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `run -worker` refuses a bad command or a bad worker before anything
// starts: exit 2, and the message names the worker and what went wrong.
func TestRunWorkerFlagErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.sh")
	os.WriteFile(garbage, []byte("#!/bin/sh\nread l\necho 'Hello from my worker'\nsleep 60\n"), 0o755)
	etcdOnly := filepath.Join(dir, "etcd.sh")
	os.WriteFile(etcdOnly, []byte("#!/bin/sh\nread l\necho '{\"type\":\"ready\",\"lock\":\"mine\",\"needs\":\"etcd\"}'\nread l\n"), 0o755)
	cases := []struct {
		worker string
		want   []string
	}{
		{`python3 'worker.py`, []string{"-worker: unterminated quote"}},
		{`python3 worker.py | tee log`, []string{`"|"`, "no shell runs the command"}},
		{`python3 $HOME/worker.py`, []string{`"$"`}},
		{`   `, []string{"-worker: empty command"}},
		{`/nonexistent/worker --flag`, []string{"worker describe (/nonexistent/worker --flag): cannot start"}},
		{`/bin/sh ` + garbage, []string{"worker describe (/bin/sh ", "stdout:1:", `"Hello from my worker"`}},
	}
	for _, c := range cases {
		code, _, stderr := run("run", "-backend", "process", "-worker", c.worker, "standalone-control")
		if code != 2 {
			t.Errorf("-worker %q: exit %d, want 2", c.worker, code)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("-worker %q: stderr %q does not say %q", c.worker, stderr, w)
			}
		}
	}
	code, _, stderr := run("run", "-backend", "process", "-worker", "/bin/sh "+etcdOnly, "standalone-control")
	if code != 2 || !strings.Contains(stderr, "topology.kind") || !strings.Contains(stderr, "mine needs etcd") {
		t.Errorf("needs etcd on a standalone topology: exit %d, stderr %q", code, stderr)
	}
}
