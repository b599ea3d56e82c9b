package scenarios

import (
	"strings"
	"testing"
)

func TestBuiltinsLoad(t *testing.T) {
	if len(Names()) == 0 {
		t.Fatal("no built-in scenarios")
	}
	for _, n := range Names() {
		if _, err := Load(n); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

const good = `name: x
topology:
  kind: standalone
lock:
  name: single
  ttl: 1s
workload:
  clients: 2
  hold: 10ms
nemesis:
  cycles: 2
  steps:
    - quiesce
    - {sleep: 1s}
    - resume
expect: [safe]
`

func TestParseGood(t *testing.T) {
	s, err := Parse("good.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if s.Lock.Wait != s.Lock.TTL || s.Workload.Resource != "order" {
		t.Fatalf("defaults not applied: %+v %+v", s.Lock, s.Workload)
	}
	if got := strings.Join(s.Schedule(), "; "); got != "quiesce; sleep 1s; resume" {
		t.Fatalf("schedule %q", got)
	}
	if s.Nemesis.Steps[1].Line != 14 {
		t.Fatalf("step line %d, want 14", s.Nemesis.Steps[1].Line)
	}
}

// Every bad input names the file, the line, the field and what is allowed.
func TestParseErrorsNameFileLineAndField(t *testing.T) {
	cases := []struct {
		name, from, to string
		want           []string
	}{
		{"unknown field", "  hold: 10ms", "  hold: 10ms\n  colour: red", []string{"bad.yaml:10:", "workload.colour", "unknown field (allowed: clients, hold"}},
		{"bad kind", "kind: standalone", "kind: kluster", []string{"bad.yaml:3:", "topology.kind", "allowed: standalone, replicated, masters, etcd, cluster"}},
		{"bad duration", "ttl: 1s", "ttl: soon", []string{"bad.yaml:6:", "lock.ttl", "not a duration"}},
		{"bad verdict", "expect: [safe]", "expect: [broken]", []string{"bad.yaml:16:", "expect.0", "allowed: overlap, corruption, fence-inversion, stale-extend, died, fenced, stuck, unavailable, not-exercised, unknown, safe"}},
		{"two actions", "- {sleep: 1s}", "- {sleep: 1s, await: grant}", []string{"bad.yaml:14:", "nemesis.steps.1", "exactly one of"}},
		{"bare word", "- resume", "- resumed", []string{"bad.yaml:15:", "nemesis.steps.2", "quiesce and resume"}},
		{"no clients", "clients: 2", "clients: 0", []string{"bad.yaml:8:", "workload.clients", "1 to 64"}},
		{"bad await", "- {sleep: 1s}", "- {await: release}", []string{"bad.yaml:14:", "nemesis.steps.1.await", "allowed: grant, read, write, renew, in-sync"}},
		{"in-sync without replicas", "- {sleep: 1s}", "- {await: in-sync}", []string{"bad.yaml:14:", "nemesis.steps.1.await", "in-sync needs a replicated or cluster topology, not standalone"}},
		{"bad quiesce", "clients: 2", "clients: 2\n  quiesce: abrupt", []string{"bad.yaml:", "workload.quiesce", "allowed: wait, cut"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(good, c.from, c.to, 1)
			if src == good {
				t.Fatalf("case did not change the input")
			}
			_, err := Parse("bad.yaml", []byte(src))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestLockLabel(t *testing.T) {
	for _, c := range []struct {
		lock Lock
		want string
	}{
		{Lock{Name: "single"}, "single"},
		{Lock{Name: "redisson", Options: map[string]string{"wait-replicas": "1"}}, "redisson+wait-replicas=1"},
		{Lock{Name: "x", Options: map[string]string{"b": "2", "a": "1"}}, "x+a=1+b=2"},
	} {
		if got := c.lock.Label(); got != c.want {
			t.Errorf("%+v: label %q, want %q", c.lock, got, c.want)
		}
	}
}
