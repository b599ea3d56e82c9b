package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lockfault/lockfault/worker"
)

// TestMain lets this test binary double as the worker process (the suite
// tests start it with LOCKFAULT_ROLE=worker), and removes the simulate
// binaries the tests and benchmarks built.
func TestMain(m *testing.M) {
	if worker.IsWorker() {
		worker.Main()
		return
	}
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	if benchRoot != "" {
		os.RemoveAll(benchRoot)
	}
	os.Exit(code)
}
