package campaign

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestYAMLReadsBackAsTheSameCampaign: a campaign given by flags, written as
// a definition file (what -emit k8s puts in the ConfigMap), is read back as
// the same campaign: the same canonical form, so the same hash.
func TestYAMLReadsBackAsTheSameCampaign(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("mine.yaml", []byte("scenario text"), 0o644); err != nil {
		t.Fatal(err)
	}
	cat := testCatalog()
	cat.CheckScenario = nil
	for _, v := range []Values{
		{Locks: []string{"single"}, Properties: []string{"exclusion"}, Repetitions: 2},
		{Name: "ci", Locks: []string{"single", "redlock"}, Worker: "python3 w.py", WorkerLock: "redis-py", WorkerKnown: []string{"node-clock", "failover"},
			Properties: []string{"crash"}, Scenarios: []string{"single-crash", "mine.yaml"}, Hunt: []string{"0", "7:3"}, Repetitions: 20},
	} {
		d, err := FromValues(v, cat)
		if err != nil {
			t.Fatal(err)
		}
		text, err := d.YAML()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "campaign.yaml")
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
		back, err := ReadFile(path, cat)
		if err != nil {
			t.Fatalf("%+v: the written definition does not read back: %v\n%s", v, err, text)
		}
		if !bytes.Equal(back.Canonical(), d.Canonical()) {
			t.Errorf("%+v: read back as another campaign:\n%s\nwant\n%s\nfile:\n%s", v, back.Canonical(), d.Canonical(), text)
		}
	}
}
