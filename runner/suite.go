package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/reports"
	"github.com/lockfault/lockfault/suite"
)

// SuiteOptions configure a run of the property suite against one lock.
type SuiteOptions struct {
	// Options of every property run: Lock (required), Backend, Cycles
	// (overrides every property's), WorkerCommand, Log. ReportsDir is the
	// root: the card goes to <ReportsDir>/suite/<lock>/<run-id>/ and each
	// property's run report inside that folder.
	Options
	// Info describes the lock; when empty it is looked up in lockimpl's
	// registry by Options.Lock.
	Info lockimpl.Info
	// Parallel properties run at the same time (default 2).
	Parallel int
	// Only and Skip select properties by name or name prefix
	// ("exclusion" selects "exclusion/no-faults"); empty Only: all.
	Only, Skip []string
	// Short halves every property's cycles (rounded up).
	Short bool
	// Timeout bounds each property's run (default 15 minutes); a run cut
	// short is a harness error.
	Timeout time.Duration
}

// SuiteTimeout is the default bound of one property's run.
const SuiteTimeout = 15 * time.Minute

// SelectProperties splits the suite for a lock: the properties to run
// and those it does not claim (with the reason), after -only/-skip. A
// pattern that names no property is an error.
func SelectProperties(info lockimpl.Info, only, skip []string) (apply []suite.Property, notClaimed map[string]string, err error) {
	for _, pats := range [][]string{only, skip} {
		for _, pat := range pats {
			hit := false
			for _, p := range suite.All() {
				hit = hit || propertyMatches(p.Name, pat)
			}
			if !hit {
				return nil, nil, fmt.Errorf("no property matches %q (properties: %s)", pat, strings.Join(PropertyNames(), ", "))
			}
		}
	}
	keep := func(name string) bool {
		if len(only) > 0 && !anyMatch(name, only) {
			return false
		}
		return !anyMatch(name, skip)
	}
	all, nc := suite.For(info)
	notClaimed = map[string]string{}
	for _, p := range all {
		if keep(p.Name) {
			apply = append(apply, p)
		}
	}
	for n, why := range nc {
		if keep(n) {
			notClaimed[n] = why
		}
	}
	return apply, notClaimed, nil
}

// PropertyNames lists the suite's property names, sorted.
func PropertyNames() []string {
	var out []string
	for _, p := range suite.All() {
		out = append(out, p.Name)
	}
	return out
}

func propertyMatches(name, pat string) bool {
	pat = strings.TrimSuffix(pat, "/")
	return name == pat || strings.HasPrefix(name, pat+"/")
}

func anyMatch(name string, pats []string) bool {
	for _, p := range pats {
		if propertyMatches(name, p) {
			return true
		}
	}
	return false
}

// RunProperty runs one property of the suite against a lock (info, also
// opt.Lock), its scenario fitted to the lock's topology, and makes its
// card row. Report is the run's report.md as a path under
// opt.ReportsDir. It never returns a "not claimed" row: the caller has
// already decided that the property applies.
func RunProperty(ctx context.Context, p suite.Property, info lockimpl.Info, opt Options, short bool) card.Row {
	started := time.Now()
	row := card.Row{Property: p.Name, Explanation: p.Explanation, Scenario: p.Scenario}
	fail := func(err error) card.Row {
		row.Outcome, row.Finding, row.Duration = card.HarnessError, oneLine(err.Error()), time.Since(started)
		return row
	}
	sc, err := p.LoadFor(info)
	if err != nil {
		return fail(err)
	}
	if opt.Lock == "" {
		opt.Lock = info.Name
	}
	if short && opt.Cycles == 0 {
		opt.Cycles = (sc.Nemesis.Cycles + 1) / 2
	}
	if sc, err = PrepareScenario(sc, opt); err != nil {
		return fail(err)
	}
	row.Expect = sc.Expect
	out, err := Run(ctx, sc, opt)
	row.Duration = time.Since(started)
	if out != nil {
		row.Report = filepath.Join(out.Dir, reports.FileMarkdown)
	}
	if Code(out, err) == ExitHarness {
		msg := ""
		switch {
		case err != nil:
			msg = err.Error()
		case out != nil && out.Meta.Error != "":
			msg = out.Meta.Error
		default:
			msg = "the run was interrupted"
		}
		if ctx.Err() == context.DeadlineExceeded {
			msg = "timed out: " + msg
		}
		r := fail(fmt.Errorf("%s", msg))
		r.Report = row.Report
		return r
	}
	res := out.Result
	row.Observed = res.Observed
	if len(row.Observed) == 0 {
		row.Observed = []string{checker.ClassSafe}
	}
	row.Cycles = len(res.CycleObserved)
	notExercised := false
	for _, c := range res.Observed {
		notExercised = notExercised || c == checker.ClassNotExercised
	}
	if out.Meta.Matched && !notExercised {
		row.Outcome = card.Held
		return row
	}
	row.Outcome = card.Violated
	allowed := map[string]bool{checker.ClassSafe: true}
	for _, c := range append(append([]string(nil), sc.Expect...), sc.Allow...) {
		allowed[c] = true
	}
	if notExercised {
		allowed[checker.ClassNotExercised] = false
	}
	for _, cs := range res.CycleObserved {
		for _, c := range cs {
			if !allowed[c] {
				row.BadCycles++
				break
			}
		}
	}
	for _, f := range res.Findings {
		if allowed[f.Class] {
			continue
		}
		if len(row.Findings) < 5 {
			row.Findings = append(row.Findings, oneLine(reports.FindingSentence(f)))
		}
	}
	switch {
	case len(row.Findings) > 0:
		row.Finding = row.Findings[0]
	default:
		// Nothing forbidden was seen, but the expectation was not met
		// (an expected class never showed).
		row.Finding = oneLine(out.Meta.Why)
		row.BadCycles = row.Cycles
	}
	return row
}

// RunSuite runs every applicable property against one lock, Parallel at a
// time, and writes the card (suite.md, suite.html, suite.json, suite.png,
// junit.xml) into its folder. progress is called once per property as it
// finishes (not-claimed rows first). Errors are returned only for bad
// input, before anything starts; a property whose run failed is a
// harness-error row.
func RunSuite(ctx context.Context, opt SuiteOptions, progress func(done, total int, r card.Row)) (*card.Card, string, error) {
	info := opt.Info
	if info.Name == "" {
		var ok bool
		if info, ok = lockimpl.Lookup(opt.Lock); !ok {
			return nil, "", fmt.Errorf("unknown lock %q (known: %s)", opt.Lock, strings.Join(lockimpl.Names(), ", "))
		}
	}
	if opt.Lock == "" {
		opt.Lock = info.Name
	}
	apply, notClaimed, err := SelectProperties(info, opt.Only, opt.Skip)
	if err != nil {
		return nil, "", err
	}
	if opt.Parallel < 1 {
		opt.Parallel = 2
	}
	if opt.Timeout <= 0 {
		opt.Timeout = SuiteTimeout
	}
	if opt.ReportsDir == "" {
		opt.ReportsDir = "reports"
	}
	c := &card.Card{Lock: info.Name, Needs: info.Needs, Caps: info.Caps, Backend: opt.Backend, RunID: NewRunID(), Started: time.Now()}
	if len(opt.WorkerCommand) > 0 {
		c.Worker = JoinCommand(opt.WorkerCommand)
	}
	dir := filepath.Join(opt.ReportsDir, "suite", pathSafe(info.Name), c.RunID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	total := len(apply) + len(notClaimed)
	var mu sync.Mutex
	done := 0
	emit := func(r card.Row) {
		mu.Lock()
		defer mu.Unlock()
		c.Rows = append(c.Rows, r)
		done++
		if progress != nil {
			progress(done, total, r)
		}
	}
	var ncNames []string
	for n := range notClaimed {
		ncNames = append(ncNames, n)
	}
	sort.Strings(ncNames)
	for _, n := range ncNames {
		p, _ := suite.Lookup(n)
		emit(card.Row{Property: n, Explanation: p.Explanation, Scenario: p.Scenario, Outcome: card.NotClaimed, Finding: notClaimed[n]})
	}
	po := opt.Options
	po.ReportsDir = dir
	sem := make(chan struct{}, opt.Parallel)
	var wg sync.WaitGroup
	for _, p := range apply {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			emit(card.Row{Property: p.Name, Explanation: p.Explanation, Scenario: p.Scenario, Outcome: card.HarnessError, Finding: "not run: the suite was interrupted"})
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			pctx, cancel := context.WithTimeout(ctx, opt.Timeout)
			defer cancel()
			emit(RunProperty(pctx, p, info, po, opt.Short))
		}()
	}
	wg.Wait()
	c.Duration = time.Since(c.Started)
	if b := c.Backend; b == "" || b == "auto" {
		// The backend "auto" picked, as the runs recorded it.
		for _, r := range c.Rows {
			if r.Report != "" {
				if m, err := readBackend(filepath.Dir(r.Report)); err == nil && m != "" {
					c.Backend = m
					break
				}
			}
		}
	}
	c.Sort()
	c.Dir = dir
	// The files hold report paths relative to the card's folder.
	rel := *c
	rel.Rows = append([]card.Row(nil), c.Rows...)
	for i := range rel.Rows {
		if r, err := filepath.Rel(dir, rel.Rows[i].Report); err == nil && rel.Rows[i].Report != "" {
			rel.Rows[i].Report = filepath.ToSlash(r)
		}
	}
	if err := reports.WriteCard(dir, &rel); err != nil {
		return c, dir, err
	}
	return c, dir, nil
}

// readBackend reads the backend a run used from its report.json.
func readBackend(runDir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(runDir, reports.FileJSON))
	if err != nil {
		return "", err
	}
	var doc struct {
		Meta reports.Meta `json:"meta"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return "", err
	}
	return doc.Meta.Backend, nil
}

var unsafePath = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// pathSafe makes a lock name usable as one folder name.
func pathSafe(s string) string {
	s = unsafePath.ReplaceAllString(s, "_")
	if s == "" || s == "." || s == ".." {
		return "lock"
	}
	return s
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
