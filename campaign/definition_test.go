package campaign

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestParseExpandsAndExpects(t *testing.T) {
	d := mustParse(t, sampleDefinition, "mine/x.yaml", "name: x\n")
	var keys []string
	for _, it := range d.Items {
		keys = append(keys, it.Key())
	}
	want := []string{"property:exclusion/no-faults", "property:crash/frees-within-ttl", "property:crash/mid-acquire",
		"scenario:single-crash", "scenario:mine/x.yaml", "hunt:7", "hunt:8"}
	if !slices.Equal(keys, want) {
		t.Fatalf("items %v, want %v", keys, want)
	}
	if d.Runs() != 3*7*3 {
		t.Fatalf("runs %d, want %d", d.Runs(), 3*7*3)
	}
	item := func(k string) Item { return d.Items[slices.Index(keys, k)] }
	cases := []struct {
		subject int
		item    string
		want    Expectation
	}{
		{0, "property:exclusion/no-faults", Expectation{Held, SourcePromise}},
		{1, "property:exclusion/no-faults", Expectation{Violated, SourcePromise}},
		{2, "property:exclusion/no-faults", Expectation{Held, SourceDefault}},
		{2, "property:crash/mid-acquire", Expectation{Violated, SourceDefinition}},
		{0, "scenario:single-crash", Expectation{Matched, SourceDefault}},
		{0, "scenario:mine/x.yaml", Expectation{NoMatch, SourceDefinition}},
		{1, "hunt:8", Expectation{Held, SourceDefault}},
	}
	for _, c := range cases {
		if got := d.Expect(d.Subjects[c.subject], item(c.item)); got != c.want {
			t.Errorf("%s × %s: %+v, want %+v", d.Subjects[c.subject].Key(), c.item, got, c.want)
		}
	}
	if it := item("scenario:mine/x.yaml"); it.FileSHA256 == "" || !strings.HasSuffix(it.Path, filepath.FromSlash("mine/x.yaml")) || !filepath.IsAbs(it.Path) {
		t.Errorf("scenario file item %+v: want its hash and a path beside the definition", it)
	}
}

func TestHashIsCanonical(t *testing.T) {
	a := mustParse(t, sampleDefinition, "mine/x.yaml", "name: x\n")
	// The same campaign written in another order, with other comments and
	// flow style, hashes alike.
	reordered := `name: nightly
items: [{hunt: {count: 2, from: 7}}, {scenario: mine/x.yaml, expect: no-match}, {scenario: single-crash}, {property: crash/}, {property: exclusion}]
subjects:
  - {lock: redis-py, worker: python3 examples/python-redis/worker.py, expect: {"property:crash/mid-acquire": violated}}
  - lock: get-set   # known to break exclusion
  - lock: single
repetitions: 3
`
	b := mustParse(t, reordered, "mine/x.yaml", "name: x\n")
	if a.Hash() != b.Hash() {
		t.Fatalf("reordering changed the hash:\n%s\n%s", a.Canonical(), b.Canonical())
	}
	changes := map[string]*Definition{
		"another repetition count": mustParse(t, strings.Replace(sampleDefinition, "repetitions: 3", "repetitions: 4", 1), "mine/x.yaml", "name: x\n"),
		"another scenario file":    mustParse(t, sampleDefinition, "mine/x.yaml", "name: y\n"),
		"another expectation":      mustParse(t, strings.Replace(sampleDefinition, "expect: no-match", "expect: matched", 1), "mine/x.yaml", "name: x\n"),
	}
	for what, d := range changes {
		if d.Hash() == a.Hash() {
			t.Errorf("%s did not change the hash", what)
		}
	}
	v := *a
	v.Version = "test-2"
	if v.Hash() == a.Hash() {
		t.Error("another lockfault version did not change the hash")
	}
	back, err := DecodeCanonical(a.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	back.Version = a.Version
	if back.Hash() != a.Hash() {
		t.Fatalf("the canonical form does not round-trip:\n%s\n%s", a.Canonical(), back.Canonical())
	}
}

func TestParseRefusesBadInput(t *testing.T) {
	base := "repetitions: 2\nsubjects: [{lock: single}]\nitems: [{property: exclusion}]\n"
	cases := []struct{ text, want string }{
		{"repetitions: 2\nsubjects: [{lock: single}]\nitems: [{property: exclusion}]\nparallel: 3\n",
			"c.yaml:4: parallel: unknown field (allowed: name, repetitions, subjects, items)"},
		{"repetitions: 2\nsubjects:\n  - lock: single\n    cmd: x\nitems: [{property: exclusion}]\n",
			"c.yaml:4: subjects.0.cmd: unknown field (allowed: lock, worker, known, expect)"},
		{"repetitions: 2\nsubjects:\n  - worker: python3 w.py\n    known:\n      - node-clock\n      - moon\nitems: [{hunt: 1}]\n",
			`c.yaml:6: subjects.0.known.1: unknown known limit "moon" (allowed: failover, node-clock, client-clock)`},
		{"repetitions: 2\nsubjects:\n  - worker: python3 w.py\n    known: [node-clock, failover, node-clock]\nitems: [{hunt: 1}]\n",
			`c.yaml:4: subjects.0.known.2: known limit "node-clock" is listed twice (allowed: each of failover, node-clock, client-clock once)`},
		{"repetitions: 2\nsubjects:\n  - lock: single\n    known: [node-clock]\nitems: [{hunt: 1}]\n",
			"c.yaml:4: subjects.0.known: lock single is built in: its known limits come from the promise table (allowed: known limits on a worker subject only)"},
		{"repetitions: 2\nsubjects:\n  - worker: python3 w.py\n    known: node-clock\nitems: [{hunt: 1}]\n",
			`c.yaml:4: subjects.0.known: want a list of known limits (allowed: failover, node-clock, client-clock), got "node-clock"`},
		{"repetitions: 2\nsubjects:\n  - worker: python3 w.py\n    known: [{node-clock: true}]\nitems: [{hunt: 1}]\n",
			"c.yaml:4: subjects.0.known.0: want a known limit's name (allowed: failover, node-clock, client-clock), got a mapping"},
		{"repetitions: 2\nsubjects:\n  - worker: python3 w.py\n    known: [failover, node-clock, client-clock, failover]\nitems: [{hunt: 1}]\n",
			"c.yaml:4: subjects.0.known: 4 entries (allowed: at most 3, each of failover, node-clock, client-clock once)"},
		{"repetitions: 2\nsubjects: [{lock: single}]\nitems:\n  - property: exclusion\n    expect: fine\n",
			`c.yaml:5: items.0.expect: "fine" cannot be expected of a property (allowed: held, violated, not-claimed)`},
		{"repetitions: 2\nsubjects: [{lock: single}]\nitems:\n  - scenario: single-crash\n    expect: held\n",
			`c.yaml:5: items.0.expect: "held" cannot be expected of a scenario (allowed: matched, no-match)`},
		{"repetitions: 0\nsubjects: [{lock: single}]\nitems: [{property: exclusion}]\n", "c.yaml:1: repetitions: 0 (allowed: 1 to 1000)"},
		{"repetitions: 1001\nsubjects: [{lock: single}]\nitems: [{property: exclusion}]\n", "c.yaml:1: repetitions: 1001 (allowed: 1 to 1000)"},
		{"repetitions: two\nsubjects: [{lock: single}]\nitems: [{property: exclusion}]\n", `c.yaml:1: repetitions: want a whole number (allowed: 1 to 1000), got "two"`},
		{"subjects: [{lock: single}]\nitems: [{property: exclusion}]\n", "c.yaml:1: repetitions: missing (allowed: 1 to 1000)"},
		{"repetitions: 2\nsubjects: [{lock: nolock}]\nitems: [{property: exclusion}]\n", `c.yaml:2: subjects.0.lock: unknown lock "nolock" (allowed: single, redlock, get-set; or a worker command)`},
		{"repetitions: 2\nsubjects: [{lock: single}, {lock: single}]\nitems: [{property: exclusion}]\n", "subject lock=single is listed twice (first at c.yaml:2: subjects.0.lock)"},
		{"repetitions: 2\nsubjects: [{lock: single}]\nitems: [{property: excl}]\n", `c.yaml:3: items.0.property: no property is "excl" or starts with "excl"/`},
		{"repetitions: 2\nsubjects: [{lock: single}]\nitems: [{property: exclusion}, {property: exclusion/no-faults}]\n", "item property:exclusion/no-faults is listed twice"},
		{"repetitions: 2\nsubjects: [{lock: single}]\nitems: [{property: exclusion, scenario: single-crash}]\n", "c.yaml:3: items.0: want exactly one of property, scenario, hunt, got 2"},
		{"repetitions: 2\nsubjects: [{lock: single}]\nitems: [{scenario: nope}]\n", `c.yaml:3: items.0.scenario: unknown scenario "nope"`},
		{"repetitions: 2\nsubjects: [{lock: single}]\nitems: [{scenario: /etc/x.yaml}]\n", "must be a relative path"},
		{"repetitions: 2\nsubjects: [{lock: single}]\nitems: [{scenario: missing.yaml}]\n", "missing.yaml: no such file or directory"},
		{"repetitions: 2\nsubjects: [{lock: single}]\nitems: [{hunt: {from: 1, count: 1001}}]\n", "c.yaml:3: items.0.hunt.count: 1001 (allowed: 1 to 1000)"},
		{"repetitions: 2\nsubjects: [{lock: single}]\nitems: [{hunt: {from: 1}}]\n", "items.0.hunt.count: missing (allowed: 1 to 1000 seeds)"},
		{"repetitions: 2\nsubjects: [{lock: single}]\nitems: [{hunt: -1}]\n", "c.yaml:3: items.0.hunt: -1 (allowed: 0 to"},
		{"repetitions: 2\nsubjects: [{worker: 'a | b'}]\nitems: [{property: exclusion}]\n", "c.yaml:2: subjects.0.worker: not a worker command"},
		{"repetitions: 2\nsubjects: [{worker: ' '}]\nitems: [{property: exclusion}]\n", "c.yaml:2: subjects.0.worker: empty"},
		{"repetitions: 2\nsubjects: [{lock: single, expect: {nope: held}}]\nitems: [{property: exclusion}]\n", `c.yaml:2: subjects.0.expect.nope: "nope" is not an item of this campaign (allowed: property:exclusion/no-faults)`},
		{"repetitions: 2\nsubjects: [{lock: single}]\nitems: []\n", "c.yaml:3: items: no item"},
		{"name: Big Name\n" + base, `c.yaml:1: name: "Big Name" is not a campaign name`},
		{"a: &x 1\n" + base, "c.yaml:1: anchors and aliases are not allowed"},
		{base + "---\n" + base, "c.yaml:4: a second YAML document"},
		{"", "c.yaml:1: empty definition"},
		{"repetitions: 2\nrepetitions: 3\nsubjects: [{lock: single}]\nitems: [{property: exclusion}]\n", "c.yaml:2: repetitions: listed twice (first at line 1)"},
		{"repetitions: 1000\nsubjects: [{lock: single}, {lock: redlock}]\nitems: [{hunt: {count: 51}}]\n", "102 cells × 1000 repetitions = 102000 runs (allowed: at most 100000)"},
		{strings.Repeat("#", MaxFileSize+1), "the file is 262145 bytes (allowed: at most 262144)"},
	}
	for _, c := range cases {
		_, err := Parse("c.yaml", []byte(c.text), testCatalog())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s", c.text, err, c.want)
		}
	}
	if _, err := Parse("c.yaml", []byte(base), testCatalog()); err != nil {
		t.Fatalf("the base of the cases is refused: %v", err)
	}
}

// A FIFO, a device or a directory is refused before anything is read (a
// FIFO without a writer would block a plain open forever).
func TestReadFileRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "campaign.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, os.DevNull, dir} {
		_, err := ReadFile(p, testCatalog())
		if err == nil || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), "allowed: a regular file") {
			t.Errorf("%s: %v, want a refusal", p, err)
		}
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxFileSize+10), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(big, testCatalog()); err == nil || !strings.Contains(err.Error(), "larger than 262144 bytes") {
		t.Errorf("a file over the size limit: %v", err)
	}
}

func TestFromValues(t *testing.T) {
	d, err := FromValues(Values{Name: "ci", Locks: []string{"single", "redlock"}, Properties: []string{"crash"},
		Scenarios: []string{"single-crash"}, Hunt: []string{"5", "10:3"}, Repetitions: 20}, testCatalog())
	if err != nil {
		t.Fatal(err)
	}
	if d.Runs() != 2*(2+1+4)*20 || d.Name != "ci" {
		t.Fatalf("%d runs of %s, want %d of ci", d.Runs(), d.Name, 2*(2+1+4)*20)
	}
	// The same campaign from a file hashes alike: the CLI and a file agree.
	f, err := Parse("c.yaml", []byte("name: ci\nrepetitions: 20\nsubjects: [{lock: redlock}, {lock: single}]\nitems: [{hunt: 5}, {hunt: {from: 10, count: 3}}, {scenario: single-crash}, {property: crash}]\n"), testCatalog())
	if err != nil {
		t.Fatal(err)
	}
	if f.Hash() != d.Hash() {
		t.Fatalf("flags and file differ:\n%s\n%s", d.Canonical(), f.Canonical())
	}
	cases := []struct {
		v    Values
		want string
	}{
		{Values{Locks: []string{"single"}, Properties: []string{"crash"}}, "-repeat: 0 (allowed: 1 to 1000)"},
		{Values{Locks: []string{"nope"}, Properties: []string{"crash"}, Repetitions: 1}, `-locks: unknown lock "nope"`},
		{Values{Locks: []string{"single"}, Properties: []string{"nope"}, Repetitions: 1}, `-properties: no property is "nope"`},
		{Values{Locks: []string{"single"}, Scenarios: []string{"nope"}, Repetitions: 1}, `-scenarios: unknown scenario "nope"`},
		{Values{Locks: []string{"single"}, Hunt: []string{"1:x"}, Repetitions: 1}, `-hunt: "1:x" (allowed: a seed such as 42, or FROM:COUNT such as 1:20)`},
		{Values{Locks: []string{"single"}, Hunt: []string{"1:0"}, Repetitions: 1}, "-hunt: count 0 (allowed: 1 to 1000)"},
		{Values{WorkerLock: "x", Properties: []string{"crash"}, Repetitions: 1}, "-worker-lock: given without -worker"},
		{Values{Locks: []string{"single"}, WorkerKnown: []string{"node-clock"}, Hunt: []string{"1"}, Repetitions: 1},
			"-worker-known: given without -worker (allowed: the known limits of a -worker's lock: failover, node-clock, client-clock; a built-in lock's come from its promise table)"},
		{Values{Worker: "python3 w.py", WorkerKnown: []string{"moon"}, Hunt: []string{"1"}, Repetitions: 1},
			`-worker-known: unknown known limit "moon" (allowed: failover, node-clock, client-clock)`},
		{Values{Worker: "python3 w.py", WorkerKnown: []string{"failover", "failover"}, Hunt: []string{"1"}, Repetitions: 1},
			`-worker-known: known limit "failover" is listed twice (allowed: each of failover, node-clock, client-clock once)`},
		{Values{Properties: []string{"crash"}, Repetitions: 1}, "-locks: no subject"},
		{Values{Locks: []string{"single"}, Repetitions: 1}, "-properties: no item"},
		{Values{Name: "A", Locks: []string{"single"}, Repetitions: 1}, `-name: "A" is not a campaign name`},
	}
	for _, c := range cases {
		if _, err := FromValues(c.v, testCatalog()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v:\n got %v\nwant %s", c.v, err, c.want)
		}
	}
}

// A worker subject's known limits are part of the definition: read from a
// list (sorted, whatever their order), equal from flags and from a file,
// in the hash (a hunt with other known limits draws other faults) but not
// in a run's identity, and kept by the canonical form.
func TestSubjectKnownLimits(t *testing.T) {
	const text = `name: py
repetitions: 2
subjects:
  - lock: single
  - worker: python3 w.py
    lock: redis-py
    known: [node-clock, failover]
items: [{hunt: {from: 1, count: 2}}]
`
	d := mustParse(t, text)
	w := d.Subjects[1]
	if !slices.Equal(w.Known, []string{"failover", "node-clock"}) || d.Subjects[0].Known != nil {
		t.Fatalf("known %v and %v, want [failover node-clock] on the worker only", w.Known, d.Subjects[0].Known)
	}
	if w.Key() != "worker=python3 w.py lock=redis-py" {
		t.Errorf("key %q: known limits must not change a run's identity", w.Key())
	}
	if !strings.Contains(string(d.Canonical()), `"known":["failover","node-clock"]`) {
		t.Errorf("canonical form without the known limits: %s", d.Canonical())
	}

	// The flags say the same campaign.
	v, err := FromValues(Values{Name: "py", Locks: []string{"single"}, Worker: "python3 w.py", WorkerLock: "redis-py",
		WorkerKnown: []string{"failover", "node-clock"}, Hunt: []string{"1:2"}, Repetitions: 2}, testCatalog())
	if err != nil {
		t.Fatal(err)
	}
	v.Version = d.Version
	if v.Hash() != d.Hash() {
		t.Fatalf("flags and file differ:\n%s\n%s", v.Canonical(), d.Canonical())
	}

	// Order does not count; the names do.
	same := mustParse(t, strings.Replace(text, "[node-clock, failover]", "\n      - failover\n      - node-clock", 1))
	if same.Hash() != d.Hash() {
		t.Errorf("reordered known limits changed the hash:\n%s\n%s", same.Canonical(), d.Canonical())
	}
	changes := map[string]*Definition{
		"no known limits":     mustParse(t, strings.Replace(text, "    known: [node-clock, failover]\n", "", 1)),
		"an empty list":       mustParse(t, strings.Replace(text, "[node-clock, failover]", "[]", 1)),
		"fewer known limits":  mustParse(t, strings.Replace(text, "[node-clock, failover]", "[node-clock]", 1)),
		"other known limits":  mustParse(t, strings.Replace(text, "[node-clock, failover]", "[client-clock, failover]", 1)),
		"another known limit": mustParse(t, strings.Replace(text, "[node-clock, failover]", "[node-clock, failover, client-clock]", 1)),
	}
	for what, c := range changes {
		if c.Hash() == d.Hash() {
			t.Errorf("%s did not change the hash", what)
		}
		if got, want := c.Enumerate()[1].Identity, d.Enumerate()[1].Identity; got != want {
			t.Errorf("%s changed a run's identity: %q, want %q", what, got, want)
		}
	}

	back, err := DecodeCanonical(d.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	back.Version = d.Version
	if back.Hash() != d.Hash() || !slices.Equal(back.Subjects[1].Known, w.Known) {
		t.Fatalf("the canonical form does not round-trip the known limits:\n%s\n%s", d.Canonical(), back.Canonical())
	}
	bad := strings.Replace(string(d.Canonical()), `{"lock":"single"}`, `{"lock":"single","known":["node-clock"]}`, 1)
	if _, err := DecodeCanonical([]byte(bad)); err == nil || !strings.Contains(err.Error(), "subjects.0.known: lock single is built in") {
		t.Errorf("a canonical form with known limits on a built-in lock: %v", err)
	}
}

// A hunt item names its search: the default (random) keeps the item's key
// ("hunt:3"), another is part of it ("hunt:3@learn"), so both run side by
// side in one campaign with different identities and definition hashes; a
// bad value, or a search on an item that is not a hunt, is refused at its
// line with the searches allowed.
func TestHuntItemSearch(t *testing.T) {
	cat := testCatalog()
	d, err := Parse("c.yaml", []byte("repetitions: 1\nsubjects: [{lock: single}]\nitems:\n  - hunt: 3\n  - hunt: {from: 3, count: 2}\n    search: learn\n  - hunt: 9\n    search: random\n"), cat)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, it := range d.Items {
		keys = append(keys, it.Key())
	}
	if want := []string{"hunt:3", "hunt:3@learn", "hunt:4@learn", "hunt:9"}; !slices.Equal(keys, want) {
		t.Errorf("items %v, want %v", keys, want)
	}
	if d.Items[1].Search != "learn" || d.Items[1].Seed() != 3 || d.Items[3].Search != "" {
		t.Errorf("items %+v: want search learn on seed 3, the default stored as \"\"", d.Items)
	}
	if ri := d.Items[1].RunItem(); ri.Kind != KindHunt || ri.Name != "3@learn" {
		t.Errorf("run item %+v, want hunt 3@learn (results and cells tell the two searches apart)", ri)
	}
	if ri := d.Items[0].RunItem(); ri.Name != "3" {
		t.Errorf("run item %+v, want hunt 3", ri)
	}
	plain, err := Parse("c.yaml", []byte("repetitions: 1\nsubjects: [{lock: single}]\nitems: [{hunt: 3}]\n"), cat)
	if err != nil {
		t.Fatal(err)
	}
	learn, err := Parse("c.yaml", []byte("repetitions: 1\nsubjects: [{lock: single}]\nitems: [{hunt: 3, search: learn}]\n"), cat)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Hash() == learn.Hash() {
		t.Error("a hunt's search does not change the definition hash: results of two searches would merge")
	}
	// Written back out (simulate campaign -emit k8s), the search stays.
	y, err := learn.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("c.yaml", y, cat)
	if err != nil || back.Hash() != learn.Hash() {
		t.Errorf("the written definition reads back as %v (%v):\n%s", back, err, y)
	}
	for _, c := range []struct{ text, want string }{
		{"repetitions: 1\nsubjects: [{lock: single}]\nitems:\n  - hunt: 3\n    search: fast\n",
			`c.yaml:5: items.0.search: "fast" (allowed: random, learn, learn-plain)`},
		{"repetitions: 1\nsubjects: [{lock: single}]\nitems:\n  - property: exclusion\n    search: learn\n",
			"c.yaml:5: items.0.search: only a hunt item has a search (allowed: search beside hunt; searches: random, learn, learn-plain)"},
		{"repetitions: 1\nsubjects: [{lock: single}]\nitems:\n  - hunt: 3\n    search: [learn]\n",
			"c.yaml:5: items.0.search: want"},
	} {
		if _, err := Parse("c.yaml", []byte(c.text), cat); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
	v := Values{Locks: []string{"single"}, Hunt: []string{"1:2"}, HuntSearch: "learn", Repetitions: 1}
	d, err = FromValues(v, cat)
	if err != nil || len(d.Items) != 2 || d.Items[0].Key() != "hunt:1@learn" {
		t.Errorf("-hunt 1:2 -hunt-search learn: %v, %v", d, err)
	}
	v.HuntSearch = "fast"
	if _, err := FromValues(v, cat); err == nil || err.Error() != `-hunt-search: "fast" (allowed: random, learn, learn-plain)` {
		t.Errorf("-hunt-search fast: %v", err)
	}
	v.Hunt, v.HuntSearch = nil, "learn"
	if _, err := FromValues(v, cat); err == nil || !strings.HasPrefix(err.Error(), "-hunt-search: given without -hunt") {
		t.Errorf("-hunt-search without -hunt: %v", err)
	}
}
