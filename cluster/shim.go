package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// ClockShimPath finds the clock-offset LD_PRELOAD shim built by `make shim`
// (faults/clockshim). LOCKFAULT_CLOCK_SHIM overrides the search (and must
// name a file).
func ClockShimPath() (string, error) {
	if p := os.Getenv("LOCKFAULT_CLOCK_SHIM"); p != "" {
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			return "", fmt.Errorf("clock shim LOCKFAULT_CLOCK_SHIM=%s: not a file", p)
		}
		return p, nil
	}
	var tried []string
	for _, dir := range ShimDirs() {
		p := filepath.Join(dir, "faults", "clockshim", "libclockshim.so")
		tried = append(tried, p)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("clock shim not built (run `make shim`); looked in %v", tried)
}

// ShimDirs are the module root candidates: the working directory and its
// parents up to the first go.mod, then lockfault's own source tree (where
// `make shim` builds it), for a test of another module that uses lockfault
// from a checkout (examples/golock).
func ShimDirs() []string {
	var out []string
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			out = append(out, d)
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil || filepath.Dir(d) == d {
				break
			}
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		out = append(out, filepath.Dir(filepath.Dir(file))) // .../cluster/shim.go -> the module root
	}
	return out
}
