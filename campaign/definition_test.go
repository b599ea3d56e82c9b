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
			"c.yaml:4: subjects.0.cmd: unknown field (allowed: lock, worker, expect)"},
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
		{Values{Locks: []string{"single"}, Properties: []string{"crash"}}, "-repetitions: 0 (allowed: 1 to 1000)"},
		{Values{Locks: []string{"nope"}, Properties: []string{"crash"}, Repetitions: 1}, `-locks: unknown lock "nope"`},
		{Values{Locks: []string{"single"}, Properties: []string{"nope"}, Repetitions: 1}, `-properties: no property is "nope"`},
		{Values{Locks: []string{"single"}, Scenarios: []string{"nope"}, Repetitions: 1}, `-scenarios: unknown scenario "nope"`},
		{Values{Locks: []string{"single"}, Hunt: []string{"1:x"}, Repetitions: 1}, `-hunt: "1:x" (allowed: a seed such as 42, or FROM:COUNT such as 1:20)`},
		{Values{Locks: []string{"single"}, Hunt: []string{"1:0"}, Repetitions: 1}, "-hunt: count 0 (allowed: 1 to 1000)"},
		{Values{WorkerLock: "x", Properties: []string{"crash"}, Repetitions: 1}, "-worker-lock: given without -worker"},
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
