package campaign

import (
	"os"
	"path/filepath"
	"testing"
)

// testCatalog is a small catalog: three locks, five properties, two
// scenarios, three known limits, and a promise table in which get-set
// breaks exclusion and single does not claim fencing.
func testCatalog() Registry {
	return Registry{
		Locks:      []string{"single", "redlock", "get-set"},
		Properties: []string{"crash/frees-within-ttl", "crash/mid-acquire", "exclusion/no-faults", "fencing/monotonic", "stale/release-after-pause"},
		Scenarios:  []string{"single-crash", "master-failover"},
		Limits:     []string{"failover", "node-clock", "client-clock"},
		Searches:   []string{"random", "learn", "learn-plain"},
		Promise: func(lock, prop string) Outcome {
			switch {
			case lock == "get-set" && prop == "exclusion/no-faults":
				return Violated
			case lock == "single" && prop == "fencing/monotonic":
				return NotClaimed
			}
			return Held
		},
	}
}

// mustParse parses definition text written to a file in a temp dir (so
// scenario files beside it resolve).
func mustParse(t *testing.T, text string, files ...string) *Definition {
	t.Helper()
	dir := t.TempDir()
	for i := 0; i+1 < len(files); i += 2 {
		p := filepath.Join(dir, files[i])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(files[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "campaign.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := ReadFile(path, testCatalog())
	if err != nil {
		t.Fatal(err)
	}
	d.Version = "test-1"
	return d
}

const sampleDefinition = `# a small campaign
name: nightly
repetitions: 3
subjects:
  - lock: single
  - lock: get-set
  - worker: python3 examples/python-redis/worker.py
    lock: redis-py
    expect:
      crash/mid-acquire: violated
items:
  - property: exclusion
  - property: crash
  - scenario: single-crash
  - scenario: mine/x.yaml
    expect: no-match
  - hunt: {from: 7, count: 2}
`
