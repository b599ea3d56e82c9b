package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/scenarios"
)

// Bad fault params and targets are refused before anything starts, with
// file:line, field and what is allowed.
func TestPrepareRefusesBadStepsBeforeStarting(t *testing.T) {
	base := `name: bad
topology: {kind: replicated, replicas: 1}
lock: {name: single, ttl: 1s}
workload: {clients: 2, hold: 10ms}
nemesis:
  steps:
    - STEP
expect: [safe]
`
	cases := []struct{ step, want string }{
		{"{fault: kill, target: master}", `bad.yaml:7: nemesis.steps.0.target: target "master" is not allowed for kill in a replicated topology (allowed: primary, replica, replicas, all, n1, n2)`},
		{"{fault: clock-jump, target: n1, params: {by: soon}}", `bad.yaml:7: nemesis.steps.0.params: param by: "soon" is not a duration`},
		{"{fault: clock-jump, target: n1}", "param by: missing"},
		{"{fault: failpoint, target: c1, params: {name: x, action: explode}}", `param action: "explode" is not allowed (allowed: crash, sleep, stop)`},
		{"{fault: partition-client, target: n1, params: {mode: reset, direction: to-node}}", "a one-way partition needs mode=drop"},
		{"{fault: pause-client, target: c3}", `target "c3" is not allowed for pause-client`},
		{"{fault: kill, target: n1, params: {colour: red}}", `fault kill has no param "colour" (allowed: restart)`},
		{"{fault: sentinel-failover, target: n1}", "takes no target"},
		{"{fault: teleport, target: n1}", `bad.yaml:7: nemesis.steps.0.fault: unknown fault "teleport"`},
		{"{await: grant, by: c9}", `nemesis.steps.0.by: "c9" is not a client`},
	}
	dir := t.TempDir()
	for _, c := range cases {
		path := filepath.Join(dir, "bad.yaml")
		os.WriteFile(path, []byte(strings.Replace(base, "STEP", c.step, 1)), 0o644)
		_, err := prepareNamed(path, Overrides{})
		if err == nil {
			t.Errorf("%s: accepted", c.step)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got  %v\n want %s", c.step, err, c.want)
		}
	}
}

// Every built-in scenario and variant is runnable as written.
func TestBuiltinScenariosPrepare(t *testing.T) {
	for _, n := range scenarios.Names() {
		sc, err := scenarios.Load(n)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		for _, v := range sc.VariantNames() {
			if _, err := prepareNamed(n, Overrides{Variant: v}); err != nil {
				t.Errorf("%s/%s: %v", n, v, err)
			}
		}
	}
}
