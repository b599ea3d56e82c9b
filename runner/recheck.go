package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/report"
	"github.com/lockfault/lockfault/scenarios"
)

// notFinished starts the error of a run whose harness still runs.
const notFinished = "the run has not finished"

// Recheck judges a recorded run again from its folder: the history as
// recorded, the expectation from the run's own files (report.json, or
// run.json and scenario.yaml written before it started, so a SIGKILLed run
// is judged too, flagged as killed). With rewrite it writes the report
// files again. The outcome's exit code is Code's.
func Recheck(dir string, linTimeout time.Duration, rewrite bool) (*Outcome, error) {
	path := filepath.Join(dir, "history.jsonl")
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	events, readErr := history.Read(path)
	meta, sc, err := readMeta(dir)
	if err != nil {
		return nil, err
	}
	opts := checker.Options{LinearizabilityTimeout: linTimeout}
	if sc != nil {
		req := sc.Required()
		opts.StuckAfter, opts.Evidence = sc.StuckAfter.D(), &req
	}
	res := checker.Check(events, opts)
	if readErr != nil {
		// A history that cannot be read whole has no verdict.
		res, events = checker.Unjudged(readErr.Error()), nil
	}
	meta.Matched, meta.Why = checker.Match(res.Observed, meta.Expect, meta.Allow)
	switch {
	case meta.Killed:
		meta.Matched = false
		meta.Why = "the run did not finish: " + meta.Error
	case strings.HasPrefix(meta.Error, notFinished):
		meta.Matched = false
		meta.Why = meta.Error
	case meta.Error != "":
		meta.Matched = false
		meta.Why = "the harness failed: " + meta.Error
	}
	if rewrite && readErr == nil {
		if err := report.Write(dir, meta, events, res); err != nil {
			return nil, err
		}
	}
	return &Outcome{Dir: dir, Meta: meta, Result: res, Summary: report.Summary(dir, meta, res)}, nil
}

// readMeta takes the run's metadata from report.json, and the scenario as
// run from scenario.yaml (both written by the run). When the harness died
// before writing report.json, the metadata comes from run.json and
// scenario.yaml, written at the start of the run, or, for a folder older
// than those, from the scenario named by the folder
// (reports/<scenario>/<run-id>).
func readMeta(dir string) (report.Meta, *scenarios.Scenario, error) {
	info, sc, runErr := ReadRun(dir)
	if runErr != nil && !errors.Is(runErr, os.ErrNotExist) {
		return report.Meta{}, nil, runErr
	}
	var doc struct {
		Meta report.Meta `json:"meta"`
	}
	data, err := os.ReadFile(filepath.Join(dir, report.FileJSON))
	if err == nil {
		if err := json.Unmarshal(data, &doc); err != nil {
			return doc.Meta, nil, fmt.Errorf("%s: %v", filepath.Join(dir, report.FileJSON), err)
		}
		if sc == nil {
			sc, _ = scenarios.Load(doc.Meta.Scenario) // a folder older than scenario.yaml
		}
		return doc.Meta, sc, nil
	}
	meta := func(sc *scenarios.Scenario) report.Meta {
		return report.Meta{Scenario: sc.Name, Claim: sc.Claim, Description: sc.Description, Lock: sc.Lock.Name, LockLabel: lockLabel(sc.Lock),
			Backend: info.Backend, RunID: info.RunID, Seed: info.Seed, Started: info.Started,
			Expect: sc.Expect, Allow: sc.Allow, Schedule: sc.Schedule()}
	}
	killed := "the harness was killed before it finished (no report.json)"
	if sc != nil && info.Pid > 0 && info.Pid != os.Getpid() && syscall.Kill(info.Pid, 0) == nil {
		// Its harness (or a process that reused its pid) still runs.
		m := meta(sc)
		m.Error = fmt.Sprintf(notFinished+": its harness (pid %d) may still be running; this covers the history so far", info.Pid)
		return m, sc, nil
	}
	if sc != nil {
		m := meta(sc)
		m.Killed, m.Error = true, killed
		return m, sc, nil
	}
	name := filepath.Base(filepath.Dir(filepath.Clean(dir)))
	sc, lerr := scenarios.Load(name)
	if lerr != nil {
		return report.Meta{}, nil, fmt.Errorf("%s has no report.json and no run.json, and its folder names no scenario: %v", dir, lerr)
	}
	m := meta(sc)
	m.RunID, m.Killed = filepath.Base(dir), true
	m.Error = killed + "; no run.json either: the scenario's base lock and expectation are assumed"
	return m, sc, nil
}
