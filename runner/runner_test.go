package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/cluster/docker"
	"github.com/lockfault/lockfault/history"
	_ "github.com/lockfault/lockfault/plots" // the runs' reports here have their timeline.png
	"github.com/lockfault/lockfault/worker"
)

// TestMain lets this test binary double as the worker process.
func TestMain(m *testing.M) {
	if worker.IsWorker() {
		worker.Main()
		return
	}
	os.Exit(m.Run())
}

func backends(t *testing.T) []string {
	out := []string{"process"}
	if docker.DockerAvailable(context.Background()) {
		out = append(out, "docker")
	} else {
		t.Log("no Docker engine: docker backend not exercised")
	}
	return out
}

// runScenario runs a built-in scenario and checks the report folder.
func runScenario(t *testing.T, name, backend string, cycles int) *Outcome {
	t.Helper()
	opt := Options{Backend: cluster.BackendKind(backend), ReportsDir: t.TempDir()}
	p := planNamed(t, name, Overrides{Cycles: cycles})
	sc := p.Scenario
	out, err := Run(context.Background(), p, opt)
	if err != nil {
		t.Fatalf("%s on %s: %v", name, backend, err)
	}
	for _, f := range []string{"history.jsonl", "report.json", "report.md", "timeline.png", "linearizability.html"} {
		if st, err := os.Stat(filepath.Join(out.Dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("report file %s missing or empty: %v", f, err)
		}
	}
	// The history on disk is the one that was checked.
	evs, err := history.Read(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if again := checker.Check(evs, checker.Options{StuckAfter: sc.StuckAfter.D()}); again.Verdict != out.Result.Verdict {
		t.Errorf("re-check of history.jsonl gives %s, run said %s", again.Verdict, out.Result.Verdict)
	}
	t.Logf("%s on %s: verdict %s, observed %v, %d grants, %d cycles, %v", name, backend, out.Result.Verdict,
		out.Result.Observed, out.Result.Stats.Grants, out.Result.Stats.Cycles, out.Meta.Duration)
	assertNoLeftovers(t, out.Meta.RunID)
	return out
}

func assertNoLeftovers(t *testing.T, runID string) {
	t.Helper()
	if m, _ := filepath.Glob(filepath.Join(os.TempDir(), cluster.TempPrefix+"*"+runID+"*")); len(m) > 0 {
		t.Errorf("temp dirs left behind: %v", m)
	}
	if docker.DockerAvailable(context.Background()) {
		if n, err := docker.DockerLeftovers(context.Background(), runID); err != nil || n != 0 {
			t.Errorf("%d docker objects of run %s left (%v)", n, runID, err)
		}
	}
	// Every node process of the run had its cwd in the run's temp dir.
	procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, p := range procs {
		if cwd, err := os.Readlink(p); err == nil && strings.Contains(cwd, runID) {
			t.Errorf("process %s still runs in %s", p, cwd)
		}
	}
}

func TestMasterFailoverFindsOverlap(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b, func(t *testing.T) {
			out := runScenario(t, "master-failover", b, 3)
			if !out.Meta.Matched {
				t.Fatalf("verdict %s (observed %v) did not match: %s", out.Result.Verdict, out.Result.Observed, out.Meta.Why)
			}
			if n, c := out.Result.Rate(checker.ClassOverlap); n != c {
				t.Errorf("overlap in %d of %d cycles, want every cycle", n, c)
			}
		})
	}
}

func TestReplicatedControlIsSafe(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b, func(t *testing.T) {
			out := runScenario(t, "replicated-control", b, 2)
			if out.Result.Verdict != checker.ClassSafe || !out.Meta.Matched {
				t.Fatalf("control verdict %s (observed %v), want safe", out.Result.Verdict, out.Result.Observed)
			}
			if out.Result.Stats.Grants < 3 { // 2 cycles of 3 s with 1.5 s holds: 4 or 5 grants
				t.Fatalf("only %d grants: the workload did not run", out.Result.Stats.Grants)
			}
			if out.Result.Stats.FinalValue != int64(out.Result.Stats.CriticalSecs) {
				t.Errorf("resource value %d after %d critical sections", out.Result.Stats.FinalValue, out.Result.Stats.CriticalSecs)
			}
		})
	}
}

// Ctrl-C in the middle of a fault: the run stops, the report covers the
// prefix, and nothing of the run survives.
func TestInterruptMidFaultCleansUp(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b, func(t *testing.T) {
			opt := Options{Backend: cluster.BackendKind(b), ReportsDir: t.TempDir()}
			sc, err := prepareNamed("master-failover", Overrides{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			var out *Outcome
			var runErr error
			go func() { out, runErr = Run(ctx, sc, opt); close(done) }()
			// Cancel as soon as the history shows the master killed.
			deadline := time.Now().Add(90 * time.Second)
			for !faultStarted(opt.ReportsDir, "kill") {
				select {
				case <-done:
					t.Fatalf("the run ended before its kill fault was seen: %v (outcome %+v)", runErr, out)
				default:
				}
				if time.Now().After(deadline) {
					cancel()
					<-done
					t.Fatalf("the kill fault never started in 90 s; the run: %v (outcome %+v)", runErr, out)
				}
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			<-done
			if runErr == nil || out == nil || !out.Meta.Interrupted {
				t.Fatalf("want an interrupted outcome, got %+v, %v", out, runErr)
			}
			if Code(out, runErr) != ExitHarness {
				t.Errorf("exit code %d, want %d", Code(out, runErr), ExitHarness)
			}
			if _, err := os.Stat(filepath.Join(out.Dir, "report.md")); err != nil {
				t.Errorf("no report after interrupt: %v", err)
			}
			assertNoLeftovers(t, out.Meta.RunID)
			if b == "docker" {
				if n, err := docker.DockerLeftovers(context.Background(), out.Meta.RunID); err != nil || n != 0 {
					t.Errorf("%d docker objects left (%v)", n, err)
				}
			}
		})
	}
}

// faultStarted reports whether a history being written shows fault's
// start. It reads the live file's complete lines itself: history.Read
// checks a finished file, and refuses one that grows while it reads it (as
// this one does, the run still appending), so under load it never saw the
// fault at all.
func faultStarted(dir, fault string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "*", "*", "history.jsonl"))
	for _, f := range m {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			b = b[:i]
		} else {
			continue
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			var e struct{ Kind, Fault string }
			if json.Unmarshal(line, &e) == nil && e.Kind == history.FaultStart && e.Fault == fault {
				return true
			}
		}
	}
	return false
}
