package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The toolchain's own time.go is patched once, right after runtimeNow.
func TestPatchesThisToolchainsTimeNow(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "time", "time.go"))
	if err != nil {
		t.Skip(err)
	}
	out, err := Patch(src)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), Anchor+shift) || len(out) != len(src)+len(shift) {
		t.Errorf("the patch is not the anchor plus the shift")
	}
}

// A time.go without the anchor (a Go release that changed Now) fails
// loudly instead of building a clock that cannot move.
func TestFailsLoudlyWithoutTheAnchor(t *testing.T) {
	_, err := Patch([]byte("package time\n\nfunc Now() Time {\n\treturn Time{}\n}\n"))
	if err == nil || !strings.Contains(err.Error(), "not the one the clock overlay patches") {
		t.Fatalf("err %v, want a loud refusal", err)
	}
}

// A program built with the overlay reads a wall clock moved by the offset,
// and an unmoved monotonic one.
func TestABinaryBuiltWithTheOverlayMovesItsWallClock(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program against a patched standard library")
	}
	dir := t.TempDir()
	ov, err := Write(runtime.GOROOT(), filepath.Join(dir, "clock"))
	if err != nil {
		t.Fatal(err)
	}
	prog := `package main

import (
	"fmt"
	"time"
)

func main() {
	t0 := time.Now()
	time.LockfaultSetOffset(-90 * time.Minute)
	t1 := time.Now()
	fmt.Println(t1.Round(0).Sub(t0.Round(0)) < -89*time.Minute, t1.Sub(t0) >= 0 && t1.Sub(t0) < time.Minute)
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module probe\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", "-overlay", ov, ".")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "true true" {
		t.Errorf("wall moved, monotonic unmoved: %s, want true true", got)
	}
}
