package workercheck

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestBuiltinLocks: the built-in worker passes with other kinds of lock:
// one that cannot extend (extend is answered not-supported, and the
// extend of an old lease does not apply), one on independent masters,
// and one whose watchdog renews a held grant.
func TestBuiltinLocks(t *testing.T) {
	for _, c := range []struct {
		lock    string
		options map[string]string
		only    []string
		skipped []string
	}{
		{lock: "get-del-release", only: []string{"ops/"}, skipped: []string{"ops/extend-old-lease"}},
		// Redlock's own per-node timeout (at most 50 ms) trips on a loaded
		// machine, and a grant then fails: give it room.
		{lock: "redlock", options: map[string]string{"node-timeout": "2s"}, only: []string{idRun, "ops/", idEndpoints}},
		{lock: "redisson", options: map[string]string{"watchdog": "true", "lease": "900ms"}, only: []string{idAcquire, idRenew, "ops/valid-until-in-range"}},
	} {
		t.Run(c.lock, func(t *testing.T) {
			rep := run(t, []string{self(t)}, Options{Lock: c.lock, LockOptions: c.options, Only: c.only})
			for _, r := range rep.Results {
				want := StatusOK
				if slices.Contains(c.skipped, r.ID) {
					want = StatusSkip
				}
				if r.Status != want {
					t.Errorf("%s: %s (%s), want %s", r.ID, r.Status, r.Reason, want)
				}
			}
			if c.lock == "get-del-release" {
				if r, _ := rep.Result(idExtend); !strings.Contains(r.Reason, "not-supported") {
					t.Errorf("ops/extend of a lock without extend: %q, want it to say extend is answered not-supported", r.Reason)
				}
			}
		})
	}
}

// TestCutIgnoredIsSkipped: a worker that ignores cut (allowed) is skipped
// by control/cut, never passed.
func TestCutIgnoredIsSkipped(t *testing.T) {
	rep := run(t, brokenArgv(t, "ignore-cut"), Options{Lock: "single", Only: []string{idCut}})
	if r, _ := rep.Result(idCut); r.Status != StatusSkip || !strings.Contains(r.Reason, "ignores cut") {
		t.Errorf("control/cut of a worker that ignores cut: %s %q, want skip", r.Status, r.Reason)
	}
	if rep.ExitCode() != 0 {
		t.Errorf("exit code %d, want 0", rep.ExitCode())
	}
}

// TestRunRefuses: a worker that cannot be started is Run's error (the
// CLI's exit status 2), and so is an -run naming no check.
func TestRunRefuses(t *testing.T) {
	_, err := Run(context.Background(), []string{"/nonexistent/worker"}, Options{})
	if !errors.Is(err, errStart) {
		t.Errorf("unstartable worker: %v, want a start error", err)
	}
	_, err = Run(context.Background(), []string{self(t)}, Options{Only: []string{"rules/nope"}})
	if err == nil || !strings.HasPrefix(err.Error(), `-run: "rules/nope" names no check (allowed: a check id or a prefix ending in /: handshake/describe, `) {
		t.Errorf("unknown check: %v", err)
	}
	assertNoChildren(t)
}

// TestReportFormats: a failure is printed with what was sent, what came
// back and the rule, and the JSON form carries the same.
func TestReportFormats(t *testing.T) {
	rep := run(t, brokenArgv(t, "accept-null"), Options{Lock: "single", Only: []string{"rules/null-value"}})
	text := rep.Text()
	for _, want := range []string{"FAIL rules/null-value: line ", "\n       sent stdin:", "\n       got  stdout:", "\n       rule PROTOCOL.md Rules: \"Exact keys\"", "\n0 ok, 1 FAIL, 0 skip\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	r, _ := back.Result("rules/null-value")
	if r.Status != StatusFail || r.Got == nil || len(r.Sent) == 0 || r.Sent[0].Stream != "stdin" || back.Failed != 1 || back.Lock != "single" {
		t.Errorf("JSON report: %s", b)
	}
}
