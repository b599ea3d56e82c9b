package scenarios

import (
	"strings"
	"testing"
)

func TestReentryDefaultsAndBounds(t *testing.T) {
	s, err := Parse("good.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if s.Workload.Reentry != 1 {
		t.Fatalf("reentry default %d, want 1", s.Workload.Reentry)
	}
	src := strings.Replace(good, "  hold: 10ms", "  hold: 10ms\n  reentry: 3", 1)
	if s, err = Parse("good.yaml", []byte(src)); err != nil || s.Workload.Reentry != 3 {
		t.Fatalf("reentry 3: %v %+v", err, s)
	}
	for _, bad := range []string{"-1", "17"} {
		src := strings.Replace(good, "  hold: 10ms", "  hold: 10ms\n  reentry: "+bad, 1)
		_, err := Parse("bad.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), "bad.yaml:10:") || !strings.Contains(err.Error(), "workload.reentry") {
			t.Errorf("reentry %s: error %v, want bad.yaml:10: workload.reentry", bad, err)
		}
	}
}
