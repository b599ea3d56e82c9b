package runner

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/scenarios"
)

func parse(t *testing.T, yaml string) *Plan {
	t.Helper()
	sc, err := scenarios.Parse(filepath.Join(t.TempDir(), "s.yaml"), []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return plan(t, sc, nil, Overrides{})
}

// A failpoint the lock never reaches, a client fault on a client that has
// crashed, and an await that times out, are findings of the run (not-exercised, unavailable), not harness errors; the
// run cannot be safe.
func TestUnreachedFaultsAreFindings(t *testing.T) {
	cases := []struct{ name, steps, want string }{
		{"failpoint-never-hit", `
    - {fault: failpoint, target: c1, params: {name: after-setnx, action: crash}}   # single never hits after-setnx
    - {sleep: 500ms}`, checker.ClassNotExercised},
		{"client-already-crashed", `
    - {fault: crash-client, target: c1}
    - {sleep: 300ms}
    - {fault: pause-client, target: c1}   # c1 is dead and not restarted: the pause attacks nothing
    - {sleep: 300ms}`, checker.ClassNotExercised},
		{"await-times-out", `
    - {await: write, by: c2, within: 700ms}   # c2 never writes: hold 5s`, checker.ClassUnavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc := parse(t, `name: unreached
topology: {kind: standalone}
lock: {name: single, ttl: 10s, wait: 10s}
workload: {clients: 2, hold: 5s}
nemesis:
  cycles: 1
  steps:`+c.steps+`
expect: [safe]
`)
			opt := Options{Backend: "process", ReportsDir: t.TempDir()}
			out, err := Run(context.Background(), sc, opt)
			if err != nil {
				t.Fatalf("harness error: %v", err)
			}
			if !slices.Contains(out.Result.Observed, c.want) || out.Meta.Matched {
				t.Fatalf("observed %v (matched %v), want %s and no match", out.Result.Observed, out.Meta.Matched, c.want)
			}
			assertNoLeftovers(t, out.Meta.RunID)
		})
	}
}
