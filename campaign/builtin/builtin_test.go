package builtin

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/campaign"
	"github.com/lockfault/lockfault/hunt"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/runner"
)

// The catalog holds the real registries, and a definition over them gets
// the promise table's expectations: get-set is known to break exclusion,
// single does not claim fencing, and single holds exclusion.
func TestCatalogCarriesThePromiseTable(t *testing.T) {
	cat := Registry()
	for _, l := range []string{"single", "get-set", "redlock"} {
		if !slices.Contains(cat.Locks, l) {
			t.Fatalf("lock %s missing from %v", l, cat.Locks)
		}
	}
	def, err := campaign.Parse("c.yaml", []byte("repetitions: 20\nsubjects: [{lock: single}, {lock: get-set}]\nitems: [{property: exclusion}, {property: fencing/monotonic}, {scenario: single-crash}]\n"), cat)
	if err != nil {
		t.Fatal(err)
	}
	want := map[[2]string]campaign.Outcome{
		{"single", "exclusion/no-faults"}:  campaign.Held,
		{"get-set", "exclusion/no-faults"}: campaign.Violated,
		{"single", "fencing/monotonic"}:    campaign.NotClaimed,
	}
	for _, s := range def.Subjects {
		for _, it := range def.Items {
			if w, ok := want[[2]string{s.Lock, it.Name}]; ok {
				if got := def.Expect(s, it); got.Outcome != w || got.Source != campaign.SourcePromise {
					t.Errorf("%s × %s: expected %+v, want %s from the promise table", s.Lock, it.Name, got, w)
				}
			}
		}
	}
}

// A lock with a safety option on is a subject of its own, its cells
// expected as suite.Remedies says; an option the lock does not have is
// refused at its line.
func TestCampaignLockWithOptions(t *testing.T) {
	cat := Registry()
	def, err := campaign.Parse("c.yaml", []byte("repetitions: 1\nsubjects: [{lock: redisson}, {lock: redisson+wait-replicas=1}]\nitems: [{property: failover/async-replica}, {property: exclusion/no-faults}]\n"), cat)
	if err != nil {
		t.Fatal(err)
	}
	want := map[[2]string]campaign.Outcome{
		{"redisson", "failover/async-replica"}: campaign.Violated, {"redisson+wait-replicas=1", "failover/async-replica"}: campaign.Held,
		{"redisson", "exclusion/no-faults"}: campaign.Held, {"redisson+wait-replicas=1", "exclusion/no-faults"}: campaign.NotClaimed,
	}
	for _, s := range def.Subjects {
		for _, it := range def.Items {
			if got := def.Expect(s, it); got.Outcome != want[[2]string{s.Lock, it.Name}] {
				t.Errorf("%s × %s: expected %+v, want %s", s.Lock, it.Name, got, want[[2]string{s.Lock, it.Name}])
			}
		}
	}
	_, err = campaign.Parse("c.yaml", []byte("repetitions: 1\nsubjects: [{lock: redisson+bogus=1}]\nitems: [{property: exclusion}]\n"), cat)
	if err == nil || !strings.Contains(err.Error(), `c.yaml:2: subjects.0.lock: lock redisson has no option "bogus"`) {
		t.Errorf("an unknown option: %v", err)
	}
}

// The example CI workflow's definition is a valid campaign of the real
// catalog.
func TestCIExampleDefinitionParses(t *testing.T) {
	d, err := campaign.ReadFile("../../examples/ci/campaign.yaml", Registry())
	if err != nil {
		t.Fatal(err)
	}
	if d.Runs() != 2*4*20 {
		t.Fatalf("%d runs, want 160 (the file's comment says so)", d.Runs())
	}
}

// A scenario file a definition names is checked as a scenario.
func TestScenarioFilesAreChecked(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("name: bad\ntopology: {kind: nowhere}\n"), 0o644)
	def := filepath.Join(dir, "c.yaml")
	os.WriteFile(def, []byte("repetitions: 1\nsubjects: [{lock: single}]\nitems: [{scenario: bad.yaml}]\n"), 0o644)
	_, err := campaign.ReadFile(def, Registry())
	if err == nil || !strings.Contains(err.Error(), "items.0.scenario: ") || !strings.Contains(err.Error(), "bad.yaml:") {
		t.Fatalf("a broken scenario file: %v", err)
	}
}

// A worker subject's known limits (the names `simulate hunt -known`
// takes) reach the hunt of each of its seeds; a built-in lock's hunt gets
// none from the campaign (the hunt takes its promise table's). Nothing is
// started: both subjects are resolved already and the hunt is a fake.
func TestExecutorPassesKnownLimitsToTheHunt(t *testing.T) {
	cat := Registry()
	if !slices.Equal(cat.Limits, hunt.LimitNames()) {
		t.Fatalf("catalog limits %v, want the hunt's %v", cat.Limits, hunt.LimitNames())
	}
	def, err := campaign.Parse("c.yaml", []byte("repetitions: 1\nsubjects:\n  - worker: python3 w.py\n    lock: redis-py\n    known: [node-clock, client-clock]\n  - lock: single\nitems: [{hunt: 7}, {hunt: 8, search: learn}]\n"), cat)
	if err != nil {
		t.Fatal(err)
	}
	type call struct {
		known  []string
		seed   int64
		search string
		dir    string
	}
	calls := map[string]call{}
	e := &Executor{Hunt: func(_ context.Context, subj runner.Subject, known []string, seed int64, search, dir string) campaign.Result {
		calls[subj.Name()] = call{known, seed, search, dir}
		return campaign.Result{Outcome: campaign.Held}
	}}
	e.subjects = map[string]subjectOrErr{
		def.Subjects[0].Key(): {s: runner.Subject{Info: lockimpl.Info{Name: "redis-py"}, Command: []string{"python3", "w.py"}}},
		def.Subjects[1].Key(): {s: runner.Subject{Info: lockimpl.Info{Name: "single"}, Shipped: true}},
	}
	for _, spec := range def.Enumerate() {
		spec.Dir = filepath.Join(t.TempDir(), "run")
		if r := e.Run(context.Background(), spec); r.Outcome != campaign.Held {
			t.Fatalf("%s: %s (%s)", spec.Identity, r.Outcome, r.Finding)
		}
		seed, search := int64(7), ""
		if spec.Item.Name == "8" {
			seed, search = 8, hunt.SearchLearn
		}
		if c := calls[spec.Subject.Label()]; c.seed != seed || c.search != search || c.dir != spec.Dir {
			t.Errorf("%s: hunt got seed %d search %q in %q, want %d %q in %q", spec.Identity, c.seed, c.search, c.dir, seed, search, spec.Dir)
		}
	}
	if got := calls["redis-py"].known; !slices.Equal(got, []string{"client-clock", "node-clock"}) {
		t.Errorf("the worker's hunt got known limits %v, want [client-clock node-clock]", got)
	}
	if got, ok := calls["single"]; !ok || got.known != nil {
		t.Errorf("the built-in lock's hunt got known limits %v (called: %v), want none", got.known, ok)
	}
}

// The campaigns lockfault ships (campaign/definitions/*.yaml, run by `make rates` and
// `make false-alarms`) are valid over the real registries; every cell of
// the false-alarm campaign is a hunt seed expected to come back held.
func TestShippedCampaigns(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "definitions", "*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("campaign/definitions/*.yaml: %v (%d files)", err, len(files))
	}
	cat := Registry()
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		def, err := campaign.Parse(f, raw, cat)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if filepath.Base(f) != "false-alarms.yaml" {
			continue
		}
		for _, s := range def.Subjects {
			for _, it := range def.Items {
				if e := def.Expect(s, it); it.Kind != campaign.KindHunt || e.Outcome != campaign.Held {
					t.Errorf("%s: %s × %s expects %s, want held", f, s.Key(), it.Key(), e.Outcome)
				}
			}
		}
	}
}
