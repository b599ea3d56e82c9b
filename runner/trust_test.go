package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
)

// liar runs standalone-control (3 cycles) with testdata/liar.py breaking
// one rule, and returns the outcome, the error and the history.
func liar(t *testing.T, mode string) (*Outcome, error, []history.Event) {
	t.Helper()
	cmd := []string{"/usr/bin/python3", filepath.Join("testdata", "liar.py"), mode}
	subj, err := External(context.Background(), cmd, "")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Load("standalone-control")
	if err != nil {
		t.Fatal(err)
	}
	sc.Workload.Clients = 1
	out, err := Run(context.Background(), plan(t, sc, &subj, Overrides{Cycles: 3}), Options{Backend: "process", ReportsDir: t.TempDir()})
	if out == nil {
		t.Fatalf("no outcome: %v", err)
	}
	evs, rerr := history.Read(filepath.Join(out.Dir, "history.jsonl"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	return out, err, evs
}

// A worker that lies ends the run at once: a harness error (exit 2) that
// names the worker, its stdout line and the rule; the run does not go on to
// its later cycles.
func TestLyingWorkerEndsTheRunAtOnce(t *testing.T) {
	cases := []struct{ mode, rule string }{
		{"other-lease", `names lease "c1-1-not-mine", but the acquire was for lease "c1-1"`},
		{"negative-validity", "validity_ms -5 is negative"},
		{"renew-unknown", `renew of lease "never-granted", which no acquire granted this worker`},
		{"renew-flood", "renew messages in one second (MaxRenewalsPerSecond)"},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			out, err, evs := liar(t, c.mode)
			if Code(out, err) != ExitHarness || err == nil {
				t.Fatalf("exit %d, error %v: want exit 2", Code(out, err), err)
			}
			for _, w := range []string{"worker c1 (/usr/bin/python3 ", "stdout:", c.rule} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, e := range evs {
				if e.Kind == history.Note && e.Op == "cycle" && e.Cycle > 1 {
					t.Errorf("the run went on to cycle %d after the violation", e.Cycle)
				}
			}
			if out.Result.Verdict == "safe" && out.Meta.Matched {
				t.Errorf("a lying worker's run matched: %s", out.Summary)
			}
			assertNoLeftovers(t, out.Meta.RunID)
		})
	}
}

// A worker that writes to stderr without end leaves a bounded workers.log,
// which says how much was dropped.
func TestWorkersLogIsBounded(t *testing.T) {
	out, _, evs := liar(t, "stderr-flood")
	st, err := os.Stat(filepath.Join(out.Dir, "workers.log"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > MaxWorkerLog+1024 {
		t.Errorf("workers.log is %d bytes, bound %d", st.Size(), MaxWorkerLog)
	}
	noted := false
	for _, e := range evs {
		noted = noted || (e.Op == "workers-log" && strings.Contains(e.Detail, "dropped"))
	}
	if !noted {
		t.Error("the history does not say that workers.log dropped bytes")
	}
}

// A worker that dies in every critical section proved nothing about its
// lock: the run is never safe or matched; its verdict names the death.
func TestWorkerThatDiesInItsCriticalSectionIsAFinding(t *testing.T) {
	out, err, evs := liar(t, "die-in-cs")
	if err != nil {
		t.Fatalf("harness error: %v", err)
	}
	code := Code(out, err)
	if code == ExitMatch || out.Meta.Matched || out.Result.Verdict == checker.ClassSafe {
		t.Fatalf("exit %d, verdict %s, matched %v: a worker that died in every critical section passed", code, out.Result.Verdict, out.Meta.Matched)
	}
	if !slices.Contains(out.Result.Observed, checker.ClassDied) {
		t.Errorf("observed %v, want %s", out.Result.Observed, checker.ClassDied)
	}
	if !strings.Contains(out.Summary, "process died") {
		t.Errorf("the summary does not say the lock's process died:\n%s", out.Summary)
	}
	// The history says how it ended (a library that crashes says "signal:
	// segmentation fault" here) and its last words.
	var notes []string
	for _, e := range evs {
		if e.Kind == history.Note && e.Op == history.NoteCrashed {
			notes = append(notes, e.Detail)
		}
	}
	if len(notes) == 0 || !strings.Contains(notes[0], "(exit status 3)") || !strings.Contains(notes[0], "exiting in the critical section") {
		t.Errorf("crashed notes %q: want how the worker ended (exit status 3) and its stderr", notes)
	}
}
