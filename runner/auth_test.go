package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/scenarios"
)

// A lock broken in exactly the way the AUTH test targets: it drops the
// password its endpoints carry. Test code only (the test binary is also
// the worker, so the workers know it); never registered in the product.
func init() {
	lockimpl.Register(lockimpl.Info{Name: "test-single-no-auth", Needs: "single", Promises: "test only: ignores Endpoints.Password"},
		func(cfg lockimpl.Config) (lockimpl.Lock, error) {
			cfg.Endpoints.Password = ""
			return lockimpl.New("single", cfg)
		})
}

func genPassword() string {
	var b [12]byte
	rand.Read(b[:])
	return "test-" + hex.EncodeToString(b[:])
}

// runWithPassword runs a built-in scenario with topology.password set.
func runWithPassword(t *testing.T, name, lock, backend string) *Outcome {
	t.Helper()
	sc, err := scenarios.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	sc.Topology.Password = genPassword()
	opt := Options{Backend: cluster.BackendKind(backend), ReportsDir: t.TempDir()}
	var subj *Subject
	if lock != "" {
		subj = builtIn(t, lock)
	}
	p := plan(t, sc, subj, Overrides{Cycles: 2})
	sc = p.Scenario
	out, err := Run(context.Background(), p, opt)
	if err != nil {
		t.Fatalf("%s with a password: %v", name, err)
	}
	if data, err := os.ReadFile(filepath.Join(out.Dir, FileScenario)); err != nil || strings.Contains(string(data), sc.Topology.Password) {
		t.Errorf("scenario.yaml in the report folder keeps the password (or is missing: %v)", err)
	}
	t.Logf("%s/%s with a password: verdict %s, observed %v, %d grants", name, sc.Lock.Name, out.Result.Verdict, out.Result.Observed, out.Result.Stats.Grants)
	assertNoLeftovers(t, out.Meta.RunID)
	return out
}

// The control scenarios, with every node requiring a password, are safe:
// each lock authenticates through Endpoints.Password (issue 10, AUTH).
func TestControlsWithPasswordAreSafe(t *testing.T) {
	for _, name := range []string{"standalone-control", "replicated-control", "masters-control"} {
		t.Run(name, func(t *testing.T) {
			out := runWithPassword(t, name, "", "process")
			if out.Result.Verdict != checker.ClassSafe || !out.Meta.Matched {
				t.Fatalf("verdict %s (observed %v), want safe: %s", out.Result.Verdict, out.Result.Observed, out.Meta.Why)
			}
			if out.Result.Stats.Grants < 2 {
				t.Fatalf("only %d grants: the locks did not get through AUTH", out.Result.Stats.Grants)
			}
		})
	}
}

// A lock that does not send the password gets nothing, and the run does not
// pass as safe: the test above can fail.
func TestLockWithoutPasswordFails(t *testing.T) {
	out := runWithPassword(t, "standalone-control", "test-single-no-auth", "process")
	if out.Result.Stats.Grants != 0 {
		t.Errorf("%d grants without the password", out.Result.Stats.Grants)
	}
	if out.Meta.Matched {
		t.Errorf("a lock refused by every node matched the control's expectation (verdict %s)", out.Result.Verdict)
	}
}
