package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input is refused with exit status 2 and says what is wrong; good
// input moves the clock file.
func TestRun(t *testing.T) {
	clock := filepath.Join(t.TempDir(), "clock-offset")
	bad := map[string][]string{
		"no command":       nil,
		"unknown command":  {"clock-set", clock, "1"},
		"relative path":    {"clock-offset", "clock-offset", "1"},
		"not a number":     {"clock-offset", clock, "1s"},
		"beyond a year":    {"clock-drift", clock, "31700000000000000"},
		"missing argument": {"clock-get"},
		"bad power-loss":   {"power-loss", "/d", "--dbfile", "x"},
	}
	for why, args := range bad {
		code, err := run(args, &bytes.Buffer{})
		if code != 2 || err == nil {
			t.Errorf("%s %q: exit %d, %v; want 2 and an error", why, args, code, err)
		}
	}
	if _, err := os.Stat(clock); err == nil {
		t.Fatal("a refused command created the clock file")
	}
	if code, err := run([]string{"clock-offset", clock, "3600000000000"}, &bytes.Buffer{}); code != 0 || err != nil {
		t.Fatalf("clock-offset: exit %d, %v", code, err)
	}
	var out bytes.Buffer
	if code, err := run([]string{"clock-get", clock}, &out); code != 0 || err != nil || strings.TrimSpace(out.String()) != "3600000000000" {
		t.Fatalf("clock-get: exit %d, %v, %q; want 3600000000000", code, err, out.String())
	}
	// A power loss of a directory without persistence files cuts nothing.
	out.Reset()
	if code, err := run([]string{"power-loss", filepath.Dir(clock)}, &out); code != 0 || err != nil || !strings.Contains(out.String(), `"Lost":0`) {
		t.Fatalf("power-loss: exit %d, %v, %q", code, err, out.String())
	}
}
