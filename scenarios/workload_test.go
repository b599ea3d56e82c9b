package scenarios

import (
	"strings"
	"testing"
)

// The round shapes of the property suite are bounded and explained.
func TestWorkloadRoundShapesAreValidated(t *testing.T) {
	base := `name: w
topology: {kind: standalone}
lock: {name: single, ttl: 1s}
workload: {clients: 2, hold: 10ms, WL}
nemesis: {steps: [{sleep: 1s}]}
expect: [safe]
`
	for wl, want := range map[string]string{
		"keys: 65":                      "w.yaml:4: workload.keys: want 0 to 64 keys, got 65",
		"extends: 2":                    "w.yaml:4: workload.extend_every: want a duration between 1ms and 1h when extends > 0",
		"extends: 101":                  "workload.extends: want 0 to 100 extends per round, got 101",
		"hold_until_valid: 2h":          `workload.hold_until_valid: "2h" is too long (allowed: 0 to 10m0s)`,
		"extends: 2, extend_every: 1ms": "",
		"start_apart: 61s":              "w.yaml:4: workload.start_apart: the last client would start 1m1s after the first (allowed: (clients-1) × start_apart at most 1m0s)",
		"start_apart: -1s":              `workload.start_apart: "-1s" is negative`,
		"start_apart: 60s":              "",
	} {
		_, err := Parse("w.yaml", []byte(strings.Replace(base, "WL", wl, 1)))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", wl, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want %q", wl, err, want)
		}
	}
	sc, err := Parse("w.yaml", []byte(strings.Replace(base, "WL", "keys: 3, extends: 2, extend_every: 300ms, hold_until_valid: 150ms, release_old: true", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if w := sc.Workload; w.Keys != 3 || w.Extends != 2 || w.ExtendEvery.D().Milliseconds() != 300 || w.HoldUntilValid.D().Milliseconds() != 150 || !w.ReleaseOld {
		t.Fatalf("parsed %+v", w)
	}
}
