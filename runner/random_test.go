package runner

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/scenarios"
)

// The same seed yields the same schedule; another seed another one.
func TestRandomScheduleIsSeeded(t *testing.T) {
	sc, err := scenarios.Load("random-nemesis")
	if err != nil {
		t.Fatal(err)
	}
	a := RandomSchedule(sc.Nemesis.Random, 42, 5)
	b := RandomSchedule(sc.Nemesis.Random, 42, 5)
	c := RandomSchedule(sc.Nemesis.Random, 43, 5)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("seed 42 gave two different schedules")
	}
	if reflect.DeepEqual(a, c) {
		t.Fatal("seeds 42 and 43 gave the same schedule")
	}
	if len(a) != 5 || len(a[0]) != 2*sc.Nemesis.Random.PerCycle {
		t.Fatalf("shape %d cycles x %d steps", len(a), len(a[0]))
	}
}

// A random nemesis's problems are found before anything starts, at the line
// of the field at fault; its generated steps carry the line of the random
// section, so an error during the run points there, not at line 0.
func TestRandomNemesisCheckedUpFrontAtItsLine(t *testing.T) {
	base := `name: r
topology: {kind: replicated, replicas: 1}
lock: {name: single, ttl: 1s}
workload: {clients: 2, hold: 10ms}
nemesis:
  random:
    faults: [FAULTS]
    TARGETS
    interval: 1s
    for: 1s
expect: [safe]
`
	cases := []struct{ faults, targets, want string }{
		{"kill", "", `bad.yaml:7: nemesis.random.faults.0: fault kill needs a target`},
		{"kill, teleport", "targets: [primary]", `bad.yaml:7: nemesis.random.faults.1: unknown fault "teleport"`},
		{"kill", "targets: [primary, master]", `bad.yaml:8: nemesis.random.targets.1: target "master" is not allowed for kill`},
		{"clock-jump", "targets: [primary]", `bad.yaml:7: nemesis.random.faults.0: param by: missing`},
	}
	dir := t.TempDir()
	for _, c := range cases {
		src := strings.Replace(strings.Replace(base, "FAULTS", c.faults, 1), "TARGETS", c.targets, 1)
		path := filepath.Join(dir, "bad.yaml")
		os.WriteFile(path, []byte(src), 0o644)
		_, err := prepareNamed(path, Overrides{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("faults [%s] %s:\n got  %v\n want %s", c.faults, c.targets, err, c.want)
		}
	}
	sc, err := scenarios.Load("random-nemesis")
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range RandomSchedule(sc.Nemesis.Random, 1, 2)[1] {
		if st.Line == 0 || st.Line != sc.Nemesis.Random.Line {
			t.Fatalf("generated step %q has line %d, want the random section's %d", st.String(), st.Line, sc.Nemesis.Random.Line)
		}
	}
}
