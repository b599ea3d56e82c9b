package lockfaulttest_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// forbidden are the libraries a user's test binary must not link through
// lockfaulttest: plotting (the pictures are package plots', linked only by
// those who import it), metrics (toxiproxy's server package; the harness
// runs toxiproxy-server as a program instead), tracing and containers
// (testcontainers-go and the Docker client, in package cluster/docker).
var forbidden = []string{
	"gonum.org/",
	"golang.org/x/image",
	"github.com/golang/freetype",
	"github.com/prometheus/",
	"go.opentelemetry.io/",
	"github.com/testcontainers/",
	"github.com/moby/",
	"github.com/docker/",
	"github.com/lockfault/lockfault/plots",
	"github.com/lockfault/lockfault/cluster/docker",
}

// What lockfaulttest links is what a test needs to start nodes, proxies
// and workers and to judge the history: no forbidden package among its
// dependencies (go list -deps, the packages a user's test binary gets).
func TestLockfaulttestLinksNoHeavyLibrary(t *testing.T) {
	_, here, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{if .Module}}{{.Module.Path}}{{end}}", ".")
	cmd.Dir = filepath.Dir(here)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var pkgs int
	mods := map[string]bool{}
	var seen []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, mod, _ := strings.Cut(line, " ")
		if mod == "" {
			continue // the standard library
		}
		pkgs++
		mods[mod] = true
		seen = append(seen, path)
		for _, f := range forbidden {
			if strings.HasPrefix(path, f) {
				t.Errorf("lockfaulttest links %s (forbidden: %s); find the import with `go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./lockfaulttest`", path, f)
			}
		}
	}
	// The list is the real one: it holds what a run needs.
	for _, want := range []string{"github.com/lockfault/lockfault/runner", "github.com/lockfault/lockfault/cluster", "github.com/Shopify/toxiproxy/v2/client"} {
		if !strings.Contains("\n"+strings.Join(seen, "\n")+"\n", "\n"+want+"\n") {
			t.Errorf("go list -deps lacks %s: the list is not lockfaulttest's", want)
		}
	}
	t.Logf("lockfaulttest links %d packages outside the standard library, from %d modules", pkgs, len(mods))
}
