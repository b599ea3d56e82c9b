// Package gobuild gives a test that builds one of lockfault's commands the
// flags its own test binary was built with: with the clock overlay when the
// binary has it (make test, make build), so that the build reuses the
// packages already compiled instead of compiling every one again without
// the overlay (about two minutes of both cores per command here).
package gobuild

import (
	"os"
	"path/filepath"

	"github.com/lockfault/lockfault/worker"
)

// overlay is where make's clock-overlay target writes the overlay,
// relative to the lockfault module's root.
const overlay = "build/_clock/overlay.json"

// Flags are the go build flags matching this test binary: the clock
// overlay and its tag when it was built with them (worker.ClockInProcess)
// and the overlay is found at or above dir; none otherwise.
func flags(dir string) []string {
	if !worker.ClockInProcess {
		return nil
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	for {
		p := filepath.Join(d, overlay)
		if _, err := os.Stat(p); err == nil {
			return []string{"-overlay", p, "-tags", "lockfault_clock"}
		}
		up := filepath.Dir(d)
		if up == d {
			return nil
		}
		d = up
	}
}

// Args is "build", the flags matching this test binary (the clock overlay
// found at or above dir, when it was built with it), then rest: the
// arguments of a go build.
func Args(dir string, rest ...string) []string {
	return append(append([]string{"build"}, flags(dir)...), rest...)
}
