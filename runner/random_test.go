package runner

import (
	"reflect"
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
