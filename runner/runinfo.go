package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockfault/lockfault/scenarios"
)

// Files a run writes into its report folder before anything starts, so the
// run can be re-checked with the right lock and expectation even when the
// harness is killed (`simulate check`/`report` read them).
const (
	FileRunInfo  = "run.json"
	FileScenario = "scenario.yaml"
)

// RedactedPassword replaces topology.password in a report folder's
// scenario.yaml.
const RedactedPassword = "redacted"

// RunInfo is run.json: who ran what, written at the start of a run (and
// again once the backend is known).
type RunInfo struct {
	RunID    string    `json:"run_id"`
	Scenario string    `json:"scenario"`
	Variant  string    `json:"variant,omitempty"`
	Lock     string    `json:"lock"`
	Source   string    `json:"source"`  // the scenario file as given
	Backend  string    `json:"backend"` // requested, then the one used
	Cycles   int       `json:"cycles"`
	Seed     int64     `json:"seed,omitempty"`
	Started  time.Time `json:"started"`
	Pid      int       `json:"pid"` // the harness
}

// lockLabel is l's label when it has options, else "" (Meta.LockLabel).
func lockLabel(l scenarios.Lock) string {
	if len(l.Options) == 0 {
		return ""
	}
	return l.Label()
}

func writeRunFiles(dir string, sc *scenarios.Scenario, info RunInfo) error {
	if sc.Topology.Password != "" {
		// The password only guards this run's own nodes: any value
		// reproduces the run, so the report folder does not keep it.
		c := *sc
		c.Topology.Password = RedactedPassword
		sc = &c
	}
	data, err := sc.Marshal()
	if err != nil {
		return fmt.Errorf("write %s: %w", FileScenario, err)
	}
	head := fmt.Sprintf("# The scenario as run %s (variant %q, after command-line overrides).\n", info.RunID, info.Variant)
	if err := writeFileSync(filepath.Join(dir, FileScenario), append([]byte(head), data...)); err != nil {
		return err
	}
	return writeRunInfo(dir, info)
}

func writeRunInfo(dir string, info RunInfo) error {
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	return writeFileSync(filepath.Join(dir, FileRunInfo), append(data, '\n'))
}

// writeFileSync replaces a file atomically and durably: a harness killed at
// any moment leaves the old or the new file, never half of one.
func writeFileSync(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// ReadRun reads a report folder's run.json and scenario.yaml (the scenario
// as run). A folder from before these files existed returns an error
// wrapping os.ErrNotExist.
func ReadRun(dir string) (RunInfo, *scenarios.Scenario, error) {
	var info RunInfo
	data, err := os.ReadFile(filepath.Join(dir, FileRunInfo))
	if err != nil {
		return info, nil, err
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return info, nil, fmt.Errorf("%s: %v", filepath.Join(dir, FileRunInfo), err)
	}
	path := filepath.Join(dir, FileScenario)
	raw, err := scenarios.ReadFile(path)
	if err != nil {
		return info, nil, err
	}
	sc, err := scenarios.Parse(path, raw)
	if err != nil {
		return info, nil, err
	}
	sc.Variant = info.Variant
	return info, sc, nil
}
