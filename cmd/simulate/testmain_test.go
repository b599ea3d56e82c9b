package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the simulate binaries the tests and benchmarks built.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, bin := range []string{binPath, benchBin} {
		if bin != "" {
			os.RemoveAll(filepath.Dir(bin))
		}
	}
	os.Exit(code)
}
