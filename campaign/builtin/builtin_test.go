package builtin

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/campaign"
)

// The catalog holds the real registries, and a definition over them gets
// the promise table's expectations: get-set is known to break exclusion,
// single does not claim fencing, and single holds exclusion.
func TestCatalogCarriesThePromiseTable(t *testing.T) {
	cat := Catalog()
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
	cat := Catalog()
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
	d, err := campaign.ReadFile("../../examples/ci/campaign.yaml", Catalog())
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
	_, err := campaign.ReadFile(def, Catalog())
	if err == nil || !strings.Contains(err.Error(), "items.0.scenario: ") || !strings.Contains(err.Error(), "bad.yaml:") {
		t.Fatalf("a broken scenario file: %v", err)
	}
}
