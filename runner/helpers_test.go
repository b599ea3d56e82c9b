package runner

import (
	"context"
	"testing"

	"github.com/lockfault/lockfault/scenarios"
)

// plan prepares a loaded scenario for a test (subj nil: its own lock).
func plan(t testing.TB, sc *scenarios.Scenario, subj *Subject, ov Overrides) *Plan {
	t.Helper()
	p, err := Prepare(context.Background(), sc, subj, ov)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// planNamed loads a built-in scenario (or a file) and prepares it.
func planNamed(t testing.TB, nameOrPath string, ov Overrides) *Plan {
	t.Helper()
	sc, err := Load(nameOrPath)
	if err != nil {
		t.Fatal(err)
	}
	return plan(t, sc, nil, ov)
}

// prepareNamed is Prepare of a built-in scenario or file, for tests that
// expect an error.
func prepareNamed(nameOrPath string, ov Overrides) (*Plan, error) {
	sc, err := Load(nameOrPath)
	if err != nil {
		return nil, err
	}
	return Prepare(context.Background(), sc, nil, ov)
}

// builtIn resolves a lock for a test.
func builtIn(t testing.TB, name string) *Subject {
	t.Helper()
	s, err := BuiltIn(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return &s
}
