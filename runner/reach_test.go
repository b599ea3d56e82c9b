package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A node clock fault on an etcd node is refused before any node starts,
// at its line, with the reason and the topologies it reaches (issue 31:
// etcd reads its clock through the vDSO, which the node clock shim does
// not reach). The same step on a standalone Redis node is accepted.
func TestNodeClockFaultOnEtcdRefusedUpFront(t *testing.T) {
	base := `name: etcd-clock
topology: {kind: KIND}
lock: {name: LOCK, ttl: 2s}
workload: {clients: 2, hold: 10ms}
nemesis:
  steps:
    - {await: grant}
    - STEP
expect: [safe]
`
	cases := []struct{ kind, lock, step, want string }{
		{"etcd", "etcd", "{fault: clock-jump, target: all, params: {by: +5s}}",
			"bad.yaml:8: nemesis.steps.1.target: fault clock-jump cannot reach the nodes of topology etcd: etcd reads its clock through the vDSO, which the node clock shim (LD_PRELOAD) does not reach (allowed: standalone, replicated, masters, cluster)"},
		{"etcd", "etcd", "{fault: clock-drift, target: n1, params: {rate: 1s}}",
			"bad.yaml:8: nemesis.steps.1.target: fault clock-drift cannot reach the nodes of topology etcd"},
		{"standalone", "single", "{fault: clock-jump, target: all, params: {by: +5s}}", ""},
		{"standalone", "single", "{fault: clock-drift, target: n1, params: {rate: 1s}}", ""},
	}
	dir := t.TempDir()
	for _, c := range cases {
		path := filepath.Join(dir, "bad.yaml")
		y := strings.NewReplacer("KIND", c.kind, "LOCK", c.lock, "STEP", c.step).Replace(base)
		if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := prepareNamed(path, Overrides{})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s on %s: refused: %v", c.step, c.kind, err)
		case c.want == "":
		case err == nil:
			t.Errorf("%s on %s: accepted", c.step, c.kind)
		case !strings.Contains(err.Error(), c.want):
			t.Errorf("%s on %s:\n got  %v\n want %s", c.step, c.kind, err, c.want)
		}
	}
}
