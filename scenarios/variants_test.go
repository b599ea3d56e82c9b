package scenarios

import (
	"reflect"
	"testing"
)

// A variant's lock options replace the base's; a variant that names no
// options keeps them.
func TestVariantOptionsReplaceBase(t *testing.T) {
	src := `name: v
topology: {kind: standalone}
lock:
  name: redisson
  ttl: 1s
  options: {watchdog: "true", lease: 1s}
workload: {clients: 2, hold: 100ms}
nemesis: {steps: [{sleep: 1s}]}
expect: [safe]
variants:
  - name: plain
    lock: {name: single, options: {}}
  - name: other-lease
    lock: {options: {lease: 2s}}
  - name: keep
    lock: {ttl: 2s}
`
	s, err := Parse("v.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		variant string
		want    map[string]string
	}{
		{"plain", map[string]string{}},
		{"other-lease", map[string]string{"lease": "2s"}},
		{"keep", map[string]string{"watchdog": "true", "lease": "1s"}},
	} {
		v, err := s.WithVariant(c.variant)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(v.Lock.Options, c.want) {
			t.Errorf("variant %s: options %v, want %v", c.variant, v.Lock.Options, c.want)
		}
	}
	if want := map[string]string{"watchdog": "true", "lease": "1s"}; !reflect.DeepEqual(s.Lock.Options, want) {
		t.Errorf("base options changed to %v", s.Lock.Options)
	}
}

// A variant's evidence section replaces the base's (what a cycle must show
// belongs to the lock the variant runs); one that names none keeps it.
func TestVariantEvidenceReplacesBase(t *testing.T) {
	src := `name: v
topology: {kind: standalone}
lock: {name: redisson, ttl: 1s}
workload: {clients: 2, hold: 100ms}
nemesis: {steps: [{sleep: 1s}]}
expect: [safe]
evidence: {sections: 0, renewals: 1}
variants:
  - name: plain
    lock: {name: single}
    evidence: {sections: 0}
  - name: keep
    lock: {ttl: 2s}
`
	s, err := Parse("v.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		variant            string
		sections, renewals int
	}{{"", 0, 1}, {"plain", 0, 0}, {"keep", 0, 1}} {
		v, err := s.WithVariant(c.variant)
		if err != nil {
			t.Fatal(err)
		}
		if r := v.Required(); r.Sections != c.sections || r.Renewals != c.renewals {
			t.Errorf("variant %q: evidence %+v, want sections %d, renewals %d", c.variant, r, c.sections, c.renewals)
		}
	}
}
