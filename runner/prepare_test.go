package runner

import (
	"context"
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
		{"{fault: cluster-failover, target: n1}", `bad.yaml:7: nemesis.steps.0.target: fault cluster-failover does not apply to a replicated topology (allowed: cluster)`},
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

// A variant is picked by its lock only when it names the subject and the
// base runs another lock: a variant that names no lock inherits the base's,
// and must not be picked for the base's own lock.
func TestPrepareVariantByLock(t *testing.T) {
	base := `name: pick
topology: {kind: standalone}
lock: {name: LOCK, ttl: 1s}
workload: {clients: 2, hold: 10ms}
nemesis:
  steps: [{sleep: 10ms}]
expect: [safe]
variants:
  - name: no-lock
    nemesis:
      steps: [{sleep: 20ms}]
  - name: with-redislock
    lock: {name: redislock}
`
	cases := []struct{ base, subject, want string }{
		{"single", "single", ""},
		{"single", "redislock", "with-redislock"},
		{"single", "redsync", ""},
		{"redislock", "redislock", ""},
	}
	dir := t.TempDir()
	for _, c := range cases {
		path := filepath.Join(dir, "pick.yaml")
		os.WriteFile(path, []byte(strings.Replace(base, "LOCK", c.base, 1)), 0o644)
		sc, err := scenarios.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		subj, err := BuiltIn(context.Background(), c.subject)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := Prepare(context.Background(), sc, &subj, Overrides{})
		if err != nil {
			t.Fatal(err)
		}
		if plan.Scenario.Variant != c.want || plan.ByLock != (c.want != "") {
			t.Errorf("base lock %s, subject %s: variant %q (by lock %v), want %q", c.base, c.subject, plan.Scenario.Variant, plan.ByLock, c.want)
		}
	}
}

// Lock options a run turns on (a property's) apply to a subject's lock; with
// no subject there is nothing to apply them to, and Prepare says so.
func TestPrepareLockOptionsNeedASubject(t *testing.T) {
	sc, err := Load("gc-pause")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Prepare(context.Background(), sc, nil, Overrides{LockOptions: map[string]string{"watchdog": "true"}})
	if err == nil || !strings.Contains(err.Error(), "without a subject") {
		t.Errorf("lock options without a subject: %v, want a refusal", err)
	}
	if _, err := Prepare(context.Background(), sc, nil, Overrides{}); err != nil {
		t.Errorf("the scenario's own lock: %v", err)
	}
}
