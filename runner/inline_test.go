package runner

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/scenarios"
)

// runInline runs a scenario given as YAML on the process backend and
// returns its outcome and its history.
func runInline(t *testing.T, name, src string) (*Outcome, []history.Event) {
	t.Helper()
	sc, err := scenarios.Parse(name+".yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{Backend: "process", ReportsDir: t.TempDir()}
	return runPrepared(t, plan(t, sc, nil, Overrides{}), opt)
}

// runPrepared runs a prepared scenario and returns its outcome and history.
func runPrepared(t *testing.T, sc *Plan, opt Options) (*Outcome, []history.Event) {
	t.Helper()
	out, err := Run(context.Background(), sc, opt)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := history.Read(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return out, evs
}
