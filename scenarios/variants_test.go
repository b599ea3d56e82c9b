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
