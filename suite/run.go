package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/pages"
	"github.com/lockfault/lockfault/report"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/scenarios"
)

// Bounds of a suite run's options.
const (
	// Timeout is the default bound of one property's run.
	Timeout = 15 * time.Minute
	// MaxTimeout bounds -timeout.
	MaxTimeout = 24 * time.Hour
	// MaxParallel bounds how many properties (or scenarios) run at once.
	MaxParallel = 8
	// DefaultParallel properties run at once.
	DefaultParallel = 2
	maxCycles       = scenarios.MaxCycles
)

// Options configure a run of the suite against one lock.
type Options struct {
	// Run: Backend, WorkerTimeout, Log of every property's run; ReportsDir
	// is the root: the card goes to <ReportsDir>/suite/<lock>/<run-id>/ and
	// each property's run report inside that folder.
	Run runner.Options
	// Cycles overrides every property's number of cycles (0: their own).
	Cycles int
	// Parallel properties run at the same time (default 2).
	Parallel int
	// Only and Skip select properties by name or name prefix
	// ("exclusion" selects "exclusion/no-faults"); empty Only: all.
	Only, Skip []string
	// Short halves every property's cycles (rounded up).
	Short bool
	// Timeout bounds each property's run (default Timeout); a run cut
	// short is a harness error.
	Timeout time.Duration
	// Extra are saved scenarios (LoadExtra) that run beside the
	// properties, each a row extra/<name> (RunExtra).
	Extra []Extra
}

// Check validates the options before anything starts: bounds, and that
// every -only/-skip pattern names a property.
func (o Options) Check() error {
	switch {
	case o.Parallel < 0 || o.Parallel > MaxParallel:
		return fmt.Errorf("-parallel %d: want 1 to %d", o.Parallel, MaxParallel)
	case o.Cycles < 0 || o.Cycles > maxCycles:
		return fmt.Errorf("-cycles %d: want 0 (the property's own) to %d", o.Cycles, maxCycles)
	case o.Timeout < 0 || (o.Timeout > 0 && o.Timeout < time.Second) || o.Timeout > MaxTimeout:
		return fmt.Errorf("-timeout %v: want 1s to %v", o.Timeout, MaxTimeout)
	}
	_, _, err := Select(lockimpl.Info{}, o.Only, o.Skip)
	return err
}

// WithDefaults fills the defaults of options left zero.
func (o Options) WithDefaults() Options {
	if o.Parallel < 1 {
		o.Parallel = DefaultParallel
	}
	if o.Timeout <= 0 {
		o.Timeout = Timeout
	}
	if o.Run.ReportsDir == "" {
		o.Run.ReportsDir = "reports"
	}
	return o
}

// Select splits the suite for a lock: the properties to run and those it
// does not claim (with the reason), after -only/-skip. A pattern that names
// no property is an error.
func Select(info lockimpl.Info, only, skip []string) (apply []Property, notClaimed map[string]string, err error) {
	for _, pats := range [][]string{only, skip} {
		for _, pat := range pats {
			if !slices.ContainsFunc(All(), func(p Property) bool { return nameMatches(p.Name, pat) }) {
				return nil, nil, fmt.Errorf("no property matches %q (properties: %s)", pat, strings.Join(Names(), ", "))
			}
		}
	}
	keep := func(name string) bool {
		return (len(only) == 0 || anyMatch(name, only)) && !anyMatch(name, skip)
	}
	all, nc := For(info)
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

// Names lists the suite's property names, sorted.
func Names() []string {
	var out []string
	for _, p := range All() {
		out = append(out, p.Name)
	}
	return out
}

func nameMatches(name, pat string) bool {
	pat = strings.TrimSuffix(pat, "/")
	return name == pat || strings.HasPrefix(name, pat+"/")
}

func anyMatch(name string, pats []string) bool {
	return slices.ContainsFunc(pats, func(p string) bool { return nameMatches(name, p) })
}

// RunProperty runs one property against a subject, its scenario fitted to
// the lock's topology, and makes its card row. Report is the run's report.md
// as a path under opt.Run.ReportsDir. It never returns a "not claimed" row:
// the caller has already decided that the property applies.
func RunProperty(ctx context.Context, p Property, subj runner.Subject, opt Options) card.Row {
	row := card.Row{Property: p.Name, Explanation: p.Explanation, Scenario: p.Scenario}
	sc, err := p.LoadFor(subj.Info)
	if err != nil {
		row.Outcome, row.Finding = card.HarnessError, oneLine(err.Error())
		return row
	}
	return runRow(ctx, row, sc, subj, opt, p.Options)
}

// runRow runs a row's scenario against the subject, with the lock options
// its property turns on (where the lock declares them), and judges it.
func runRow(ctx context.Context, row card.Row, sc *scenarios.Scenario, subj runner.Subject, opt Options, lockOptions map[string]string) card.Row {
	started := time.Now()
	fail := func(err error) card.Row {
		row.Outcome, row.Finding, row.Duration = card.HarnessError, oneLine(err.Error()), time.Since(started)
		return row
	}
	ov := runner.Overrides{Cycles: opt.Cycles, LockOptions: lockOptions}
	if opt.Short && ov.Cycles == 0 {
		ov.Cycles = (sc.Nemesis.Cycles + 1) / 2
	}
	plan, err := runner.Prepare(ctx, sc, &subj, ov)
	if err != nil {
		return fail(err)
	}
	row.Expect = plan.Scenario.Expect
	out, err := runner.Run(ctx, plan, opt.Run)
	row.Duration = time.Since(started)
	if out != nil {
		row.Report = filepath.Join(out.Dir, report.FileMarkdown)
	}
	if out != nil && out.Result != nil && out.Result.Evidence != nil {
		row.Evidence = out.Result.Evidence.Text()
	}
	if err == nil && out != nil && out.Meta.Error == "" && out.Result.Verdict == checker.ClassUnknown {
		// The run proved nothing: never held.
		row.Outcome, row.Observed, row.Finding = card.Unknown, out.Result.Observed, oneLine(out.Result.Reason)
		row.Cycles = len(out.Result.CycleObserved)
		return row
	}
	if runner.Code(out, err) == runner.ExitHarness {
		msg := "the run was interrupted"
		switch {
		case err != nil:
			msg = err.Error()
		case out != nil && out.Meta.Error != "":
			msg = out.Meta.Error
		}
		if ctx.Err() == context.DeadlineExceeded {
			msg = "timed out: " + msg
		}
		r := fail(fmt.Errorf("%s", msg))
		r.Report = row.Report
		return r
	}
	judge(&row, plan, out.Result, out.Meta.Matched, out.Meta.Why)
	return row
}

// judge fills a property's row from its run's result: held when the run
// matched and nothing of the schedule went unexercised; unknown when a part
// of the schedule never reached the lock, or part of the history could not
// be judged (unknown beside an allowed class), and nothing else was wrong;
// else violated with what was seen that the property does not allow.
func judge(row *card.Row, plan *runner.Plan, res *checker.Result, matched bool, why string) {
	sc := plan.Scenario
	row.Observed = res.Observed
	if len(row.Observed) == 0 {
		row.Observed = []string{checker.ClassSafe}
	}
	row.Cycles = len(res.CycleObserved)
	notExercised := slices.Contains(res.Observed, checker.ClassNotExercised)
	unjudged := slices.Contains(res.Observed, checker.ClassUnknown)
	if matched && !notExercised {
		row.Outcome = card.Held
		return
	}
	row.Outcome = card.Violated
	allowed := map[string]bool{checker.ClassSafe: true}
	for _, c := range append(slices.Clone(sc.Expect), sc.Allow...) {
		allowed[c] = true
	}
	if notExercised || unjudged {
		allowed[checker.ClassNotExercised], allowed[checker.ClassUnknown] = false, false
		proofless := func(c string) bool { return c == checker.ClassNotExercised || c == checker.ClassUnknown }
		if matched || !slices.ContainsFunc(res.Observed, func(c string) bool { return !proofless(c) && !allowed[c] }) {
			// Nothing else went wrong: the schedule did not reach the lock
			// (a step its API cannot express, a trigger that never fired),
			// or what it did cannot be judged (a stretch without a grant
			// that the harness's own stalls made too long), so the run
			// proved nothing either way.
			row.Outcome = card.Unknown
		}
	}
	for _, cs := range res.CycleObserved {
		if slices.ContainsFunc(cs, func(c string) bool { return !allowed[c] }) {
			row.BadCycles++
		}
	}
	for _, f := range res.Findings {
		if !allowed[f.Class] && len(row.Findings) < 5 {
			row.Findings = append(row.Findings, oneLine(report.FindingSentence(f)))
		}
	}
	if len(row.Findings) > 0 {
		row.Finding = row.Findings[0]
		return
	}
	// Nothing forbidden was seen, but the expectation was not met (an
	// expected class never showed).
	row.Finding = oneLine(why)
	row.BadCycles = row.Cycles
}

// Run runs every applicable property against one subject, Parallel at a
// time, and writes the card (suite.md, suite.html, suite.json, suite.png,
// junit.xml) into its folder. progress is called once per property as it
// finishes (not-claimed rows first). Errors are returned only for bad
// input, before anything starts; a property whose run failed is a
// harness-error row.
func Run(ctx context.Context, subj runner.Subject, opt Options, progress func(done, total int, r card.Row)) (*card.Card, string, error) {
	if err := opt.Check(); err != nil {
		return nil, "", err
	}
	opt = opt.WithDefaults()
	apply, notClaimed, err := applicable(subj, opt)
	if err != nil {
		return nil, "", err
	}
	c := newCard(subj, opt)
	dir := filepath.Join(opt.Run.ReportsDir, "suite", pathSafe(subj.Label()), c.RunID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	total := len(apply) + len(notClaimed) + len(opt.Extra)
	var mu sync.Mutex
	emit := func(r card.Row) {
		mu.Lock()
		defer mu.Unlock()
		c.Rows = append(c.Rows, r)
		if progress != nil {
			progress(len(c.Rows), total, r)
		}
	}
	for _, n := range sortedKeys(notClaimed) {
		p, _ := Lookup(n)
		emit(card.Row{Property: n, Explanation: p.Explanation, Scenario: p.Scenario, Outcome: card.NotClaimed, Finding: notClaimed[n]})
	}
	po := opt
	po.Run.ReportsDir = dir
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
			emit(RunProperty(pctx, p, subj, po))
		}()
	}
	for _, e := range opt.Extra {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			emit(card.Row{Property: e.Name, Scenario: e.Path, Outcome: card.HarnessError, Finding: "not run: the suite was interrupted"})
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			pctx, cancel := context.WithTimeout(ctx, opt.Timeout)
			defer cancel()
			emit(RunExtra(pctx, e, subj, po))
		}()
	}
	wg.Wait()
	c.Duration = time.Since(c.Started)
	if c.Backend == "" || c.Backend == "auto" {
		c.Backend = usedBackend(c.Rows)
	}
	c.Sort()
	c.Dir = dir
	if err := pages.WriteCard(dir, c.RelativeTo(dir)); err != nil {
		return c, dir, err
	}
	return c, dir, nil
}

// applicable splits the properties the options select into those that
// apply to subj and those it does not claim (with the reason).
func applicable(subj runner.Subject, opt Options) (apply []Property, notClaimed map[string]string, err error) {
	apply, notClaimed, err = Select(subj.Info, opt.Only, opt.Skip)
	if err != nil {
		return nil, nil, err
	}
	apply = slices.DeleteFunc(apply, func(p Property) bool {
		ok, why := p.AppliesTo(subj)
		if !ok {
			notClaimed[p.Name] = why
		}
		return !ok
	})
	return apply, notClaimed, nil
}

// newCard is subj's card before its rows: the lock, its capabilities and
// version, the backend, a new run id, the start, and the worker (none for a
// shipped lock).
func newCard(subj runner.Subject, opt Options) *card.Card {
	c := &card.Card{Lock: subj.Label(), Needs: string(subj.Info.Needs), Caps: subj.Info.Caps, Version: subj.Info.Version,
		Backend: string(opt.Run.Backend), RunID: runner.NewRunID(), Started: time.Now(), Worker: subj.Worker()}
	if subj.Shipped {
		c.Worker = ""
	}
	return c
}

// usedBackend is the backend "auto" picked, as the runs recorded it.
func usedBackend(rows []card.Row) string {
	for _, r := range rows {
		if r.Report == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(filepath.Dir(r.Report), report.FileJSON))
		if err != nil {
			continue
		}
		var doc struct {
			Meta report.Meta `json:"meta"`
		}
		if json.Unmarshal(data, &doc) == nil && doc.Meta.Backend != "" {
			return doc.Meta.Backend
		}
	}
	return "auto"
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

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
