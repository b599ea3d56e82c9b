package lockfaulttest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A user's module that imports lockfaulttest keeps the versions of its own
// dependencies: lockfault's go.mod requires no lock library (their adapters
// live in the nested module adapters/), so a module that pins an old redsync
// still builds its tests against that redsync after `go mod tidy`.
func TestUserModuleKeepsItsPinnedLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go mod tidy against the module proxy")
	}
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(here))
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const pinned = "github.com/go-redsync/redsync/v4 v4.0.3"
	write("go.mod", "module example.com/usermod\n\ngo 1.26.8\n\nrequire "+pinned+"\n\nreplace github.com/lockfault/lockfault => "+root+"\n")
	write("lock_test.go", `package usermod

import (
	"testing"

	_ "github.com/go-redsync/redsync/v4"
	"github.com/lockfault/lockfault/lockfaulttest"
)

func TestMine(t *testing.T) { _ = lockfaulttest.Options{} }
`)
	// -e: the old redsync's own imports (go-redis v8's otel) no longer
	// resolve; that is the pinned release's business, not lockfault's.
	cmd := exec.Command("go", "mod", "tidy", "-e")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), pinned) {
		t.Errorf("go mod tidy moved the user's pinned %s:\n%s", pinned, mod)
	}
}
