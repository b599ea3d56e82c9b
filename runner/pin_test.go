package runner

import (
	"maps"
	"testing"
)

// A step on the holder acts on the client that held the lock as the step
// began, for its effect check and its injection alike (the check's own
// time no longer lets a short hold end between the two); with nobody
// holding, the step is left as written, and its injection finds nobody
// (not exercised).
func TestStepPinsTheHolder(t *testing.T) {
	r := newRun(&recorder{})
	r.holder = "c2"
	if got, _ := r.nem.pinHolder("pause-client", "holder", nil); got != "c2" {
		t.Errorf("pause-client on holder: target %q, want c2", got)
	}
	params := map[string]string{"clients": "holder", "mode": "drop"}
	before := maps.Clone(params)
	tg, p := r.nem.pinHolder("partition-client", "all", params)
	if tg != "all" || p["clients"] != "c2" || p["mode"] != "drop" {
		t.Errorf("partition-client clients=holder: target %q params %v, want all with clients=c2", tg, p)
	}
	if !maps.Equal(params, before) {
		t.Errorf("the step's own params were changed: %v", params)
	}
	if got, _ := r.nem.pinHolder("kill", "n1", nil); got != "n1" {
		t.Errorf("kill on n1: target %q", got)
	}
	// A clone holding: a client fault acts on the clone, a clients param
	// names the links it goes over, its client's.
	r.holder, r.clones["c2-clone"] = "c2-clone", "c2"
	if got, _ := r.nem.pinHolder("pause-client", "holder", nil); got != "c2-clone" {
		t.Errorf("pause-client on a clone holding: target %q, want c2-clone", got)
	}
	if _, p := r.nem.pinHolder("partition-client", "all", params); p["clients"] != "c2" {
		t.Errorf("partition-client clients=holder, a clone holding: clients %q, want c2 (its links)", p["clients"])
	}
	r.holder = ""
	if got, p := r.nem.pinHolder("partition-client", "all", params); got != "all" || p["clients"] != "holder" {
		t.Errorf("nobody holds: target %q params %v, want the step as written", got, p)
	}
	if got, _ := r.nem.pinHolder("pause-client", "holder", nil); got != "holder" {
		t.Errorf("nobody holds: pause-client target %q, want holder", got)
	}
}
