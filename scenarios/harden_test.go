package scenarios

import (
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Every case of issue 10's "bad input" list: refused at load time with
// file:line: field.path: what is wrong (allowed: ... / the bound).
func TestBadInputRefusedWithLineFieldAndBound(t *testing.T) {
	random := strings.Replace(good, "  steps:\n    - quiesce\n    - {sleep: 1s}\n    - resume\n",
		"  random:\n    faults: [kill]\n    interval: 1s\n    for: 1s\n    per_cycle: 2\n", 1)
	replicated := strings.Replace(good, "kind: standalone", "kind: replicated\n  replicas: 1", 1)
	rcluster := strings.Replace(good, "kind: standalone", "kind: cluster\n  masters: 3\n  replicas: 0\n  node_timeout: 1500ms", 1)
	cases := []struct {
		name, base, from, to string
		want                 []string
	}{
		{"wrong type", good, "clients: 2", "clients: two", []string{"bad.yaml:8: workload.clients:", `"two" is not a whole number`}},
		{"list for mapping", good, "topology:\n  kind: standalone", "topology: [standalone]", []string{"bad.yaml:2: topology:", "want a mapping of kind, replicas"}},
		{"hold 876000h", good, "hold: 10ms", "hold: 876000h", []string{"bad.yaml:9: workload.hold:", "too long (allowed: 0 to 10m0s)"}},
		{"sleep 100000h", good, "{sleep: 1s}", "{sleep: 100000h}", []string{"bad.yaml:14: nemesis.steps.1.sleep:", "too long (allowed: 0 to 10m0s)"}},
		{"negative duration", good, "ttl: 1s", "ttl: -1s", []string{"bad.yaml:6: lock.ttl:", "negative"}},
		{"ttl zero", good, "ttl: 1s", "ttl: 0s", []string{"bad.yaml:6: lock.ttl:", "allowed: 1ms to 10m0s"}},
		{"replicas 100000", replicated, "replicas: 1", "replicas: 100000", []string{"bad.yaml:4: topology.replicas:", "want 1 to 2 replicas, got 100000"}},
		{"sentinels 5", replicated, "replicas: 1", "replicas: 1\n  sentinels: 5", []string{"bad.yaml:5: topology.sentinels:", "from 3 to 3"}},
		{"masters on replicated", replicated, "replicas: 1", "replicas: 1\n  masters: 7", []string{"bad.yaml:5: topology.masters:", "does not apply to a replicated topology", "allowed for replicated: kind, replicas, sentinels, persistence, password"}},
		{"replicas on standalone", good, "kind: standalone", "kind: standalone\n  replicas: 2", []string{"bad.yaml:4: topology.replicas:", "does not apply to a standalone topology"}},
		{"password on etcd", good, "kind: standalone", "kind: etcd\n  password: x", []string{"bad.yaml:4: topology.password:", "etcd"}},
		{"clients 65", good, "clients: 2", "clients: 65", []string{"bad.yaml:8: workload.clients:", "want 1 to 64 clients, got 65"}},
		{"cycles 1000000000", good, "cycles: 2", "cycles: 1000000000", []string{"bad.yaml:11: nemesis.cycles:", "want 1 to 1000, got 1000000000"}},
		{"cycles -1", good, "cycles: 2", "cycles: -1", []string{"bad.yaml:11: nemesis.cycles:", "want 1 to 1000, got -1"}},
		{"run time", good, "cycles: 2", "cycles: 1000\n  cooldown: 9m", []string{"bad.yaml:11: nemesis.cycles:", "allowed: at most 24h0m0s in all"}},
		{"steps empty", good, "  steps:\n    - quiesce\n    - {sleep: 1s}\n    - resume\n", "  steps: []\n", []string{"bad.yaml:12: nemesis.steps:", "an empty list (allowed: 1 to 100 steps"}},
		{"no schedule", good, "  steps:\n    - quiesce\n    - {sleep: 1s}\n    - resume\n", "", []string{"bad.yaml:10: nemesis:", "no steps and no random schedule"}},
		{"heal alll", good, "- {sleep: 1s}", "- {fault: pause-node, target: n1}\n    - {heal: alll}", []string{"bad.yaml:15: nemesis.steps.2.heal:", `"alll" heals nothing`, "allowed: all, pause-node"}},
		{"heal with for", good, "- {sleep: 1s}", "- {fault: kill, target: n1, for: 1s}\n    - {heal: kill}", []string{"nemesis.steps.2.heal:", "allowed: all)"}},
		{"within without await", good, "{sleep: 1s}", "{sleep: 1s, within: 2s}", []string{"bad.yaml:14: nemesis.steps.1.within:", "await only"}},
		{"per_cycle -1", random, "per_cycle: 2", "per_cycle: -1", []string{"bad.yaml:16: nemesis.random.per_cycle:", "want 1 to 20 faults per cycle", "got -1"}},
		{"per_cycle 1000", random, "per_cycle: 2", "per_cycle: 1000", []string{"nemesis.random.per_cycle:", "got 1000"}},
		{"second document", good, "expect: [safe]\n", "expect: [safe]\n---\nname: y\n", []string{"bad.yaml:17: a second YAML document (allowed: one scenario per file)"}},
		{"syntax", good, "  hold: 10ms", "  hold: [10ms", []string{"bad.yaml:8: did not find expected"}},
		{"unknown variant field", good, "expect: [safe]\n", "expect: [safe]\nvariants:\n  - name: v\n    lok: {name: x}\n", []string{"bad.yaml:19: variants.0.lok: unknown field (allowed: name, lock, topology"}},
		{"variant bound", good, "expect: [safe]\n", "expect: [safe]\nvariants:\n  - name: v\n    lock: {ttl: 20m}\n", []string{"bad.yaml:19: variants.0.lock.ttl:", "too long"}},
		{"variant bound by validate", good, "expect: [safe]\n", "expect: [safe]\nvariants:\n  - name: v\n    workload: {clients: 99}\n", []string{"bad.yaml:19: variants.0.workload.clients:", "want 1 to 64", `(in variant "v")`}},
		{"clients missing", good, "workload:\n  clients: 2\n  hold: 10ms\n", "", []string{"bad.yaml:1: workload.clients: missing", "allowed: 1 to 64"}},
		{"name with slash", good, "name: x", "name: ../x", []string{"bad.yaml:1: name:", "without slashes"}},
		{"cluster masters 2", good, "kind: standalone", "kind: cluster\n  masters: 2", []string{"bad.yaml:4: topology.masters:", "want 3 to 7 cluster masters, got 2 (allowed: 3 to 7)"}},
		{"cluster masters 8", good, "kind: standalone", "kind: cluster\n  masters: 8", []string{"bad.yaml:4: topology.masters:", "got 8 (allowed: 3 to 7)"}},
		{"cluster masters missing", good, "kind: standalone", "kind: cluster", []string{"topology.masters:", "got 0 (allowed: 3 to 7)"}},
		{"cluster replicas 3", good, "kind: standalone", "kind: cluster\n  masters: 3\n  replicas: 3", []string{"bad.yaml:5: topology.replicas:", "want 0 to 2 replicas per master, got 3 (allowed: 0 to 2)"}},
		{"cluster replicas -1", good, "kind: standalone", "kind: cluster\n  masters: 3\n  replicas: -1", []string{"bad.yaml:5: topology.replicas:", "got -1 (allowed: 0 to 2)"}},
		{"cluster node_timeout", good, "kind: standalone", "kind: cluster\n  masters: 3\n  node_timeout: 10ms", []string{"bad.yaml:5: topology.node_timeout:", "10ms is out of range (allowed: 100ms to 1m0s"}},
		{"node_timeout on masters", good, "kind: standalone", "kind: masters\n  masters: 3\n  node_timeout: 1s", []string{"bad.yaml:5: topology.node_timeout:", "does not apply to a masters topology"}},
		{"sentinels on cluster", good, "kind: standalone", "kind: cluster\n  masters: 3\n  sentinels: 3", []string{"bad.yaml:5: topology.sentinels:", "does not apply to a cluster topology", "allowed for cluster: kind, masters, replicas, node_timeout"}},
		{"password with space", good, "kind: standalone", "kind: standalone\n  password: a b", []string{"bad.yaml:4: topology.password:", "white space"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(c.base, c.from, c.to, 1)
			if src == c.base {
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
			for _, leak := range []string{"scenarios.", "!!", ": yaml:", "line "} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("error %q leaks %q", err, leak)
				}
			}
		})
	}
	// The base cases themselves load.
	for _, b := range []string{good, random, replicated, rcluster} {
		if _, err := Parse("ok.yaml", []byte(b)); err != nil {
			t.Fatalf("base case refused: %v", err)
		}
	}
}

// prefixLines used to replace "line N" with itself; now every line of a
// YAML library error reads file:N: without Go type names.
func TestPrefixLinesNamesFileAndLine(t *testing.T) {
	var v struct{ A int }
	err := yaml.Unmarshal([]byte("a: x\n"), &v)
	if err == nil {
		t.Fatal("yaml accepted a string for an int")
	}
	got := prefixLines(err, "f.yaml", 1).Error()
	if !strings.HasPrefix(got, "f.yaml:1: ") || strings.Contains(got, "into int") || strings.Contains(got, "unmarshal errors") {
		t.Fatalf("prefixLines(%q) = %q", err, got)
	}
	got = prefixLines(errors.New("yaml: line 7: did not find expected key"), "f.yaml", 9).Error()
	if got != "f.yaml:7: did not find expected key" {
		t.Fatalf("syntax error rewritten as %q", got)
	}
	got = prefixLines(errors.New("yaml: found unexpected end of stream"), "f.yaml", 9).Error()
	if got != "f.yaml:9: found unexpected end of stream" {
		t.Fatalf("an error without a line rewritten as %q", got)
	}
}

// The scenario as run, written into the report folder, loads back to the
// same scenario: every built-in and variant round-trips through Marshal.
func TestMarshalRoundTrips(t *testing.T) {
	for _, n := range Names() {
		base, err := Load(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range base.VariantNames() {
			sc, err := base.WithVariant(v)
			if err != nil {
				t.Fatal(err)
			}
			data, err := sc.Marshal()
			if err != nil {
				t.Fatalf("%s/%s: %v", n, v, err)
			}
			back, err := Parse("scenario.yaml", data)
			if err != nil {
				t.Fatalf("%s/%s: written scenario does not load: %v\n%s", n, v, err, data)
			}
			again, _ := back.Marshal()
			if string(again) != string(data) {
				t.Errorf("%s/%s: not a fixed point:\n%s\n---\n%s", n, v, data, again)
			}
			if back.Lock.Name != sc.Lock.Name || strings.Join(back.Expect, ",") != strings.Join(sc.Expect, ",") ||
				strings.Join(back.Schedule(), ";") != strings.Join(sc.Schedule(), ";") || back.StuckAfter != sc.StuckAfter {
				t.Errorf("%s/%s: changed in the round trip", n, v)
			}
		}
	}
}
