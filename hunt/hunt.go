// Package hunt searches for schedules that break a lock: it draws fault
// schedules (at random, or derived from a corpus of schedules that covered
// something new), runs each through runner, skips the faults a lock's known
// limits name, shrinks a violation to a minimal scenario with its measured
// rate, and writes the hunt's card (above runner, like suite and campaign).
package hunt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/resp"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/scenarios"
)

// Bounds of a hunt's input.
const (
	MaxRuns      = 100000
	MaxTime      = 7 * 24 * time.Hour
	MaxRateRuns  = 1000
	MaxTries     = 20
	MaxShrinkRun = 1000
	MaxParallel  = 8
)

// Options say what a hunt searches, for how long and where it writes.
type Options struct {
	Seed      int64         // 0: from the time (printed and recorded)
	Runs      int           // schedules to try at most (0: no bound but Time)
	Time      time.Duration // wall time to spend at most (0: no bound but Runs)
	KeepGoing bool          // go on after a violation, collecting distinct ones
	// KnownViolations are the lock's known limits (Limits' names): their
	// faults are never drawn. A built-in lock's come from its promise table.
	KnownViolations []string
	// Tries: a shrinking candidate still fails when its fingerprint
	// reappears within this many runs (default 3).
	Tries int
	// RateRuns: the minimal scenario is run this many times for its
	// reproduction rate (default 20).
	RateRuns int
	// ShrinkRuns bounds the runs the shrinker may spend (default 60).
	ShrinkRuns int
	NoShrink   bool
	// Search is how schedules are drawn (Searches; default random).
	Search string
	// Parallel: schedules run at once (default 1, at most MaxParallel).
	// Shrinking and rate runs are one at a time.
	Parallel int
	Dir      string    // the hunt's folder (default reports/hunt/<lock>/<run id>)
	Log      io.Writer // progress lines (default: discard)
	Run      runner.Options
}

// Check refuses bad input before anything starts.
func (o *Options) Check() error {
	switch {
	case o.Runs < 0 || o.Runs > MaxRuns:
		return fmt.Errorf("-runs %d: want 1 to %d", o.Runs, MaxRuns)
	case o.Time < 0 || o.Time > MaxTime:
		return fmt.Errorf("-time %v: want a duration from 1s to %v", o.Time, MaxTime)
	case o.Runs == 0 && o.Time == 0:
		return errors.New("no budget: give -runs N or -time D (allowed: -runs 1 to 100000, -time 1s to 168h)")
	case o.Time > 0 && o.Time < time.Second:
		return fmt.Errorf("-time %v: want at least 1s", o.Time)
	case o.Tries < 0 || o.Tries > MaxTries:
		return fmt.Errorf("-tries %d: want 1 to %d", o.Tries, MaxTries)
	case o.RateRuns < 0 || o.RateRuns > MaxRateRuns:
		return fmt.Errorf("-rate-runs %d: want 1 to %d", o.RateRuns, MaxRateRuns)
	case o.ShrinkRuns < 0 || o.ShrinkRuns > MaxShrinkRun:
		return fmt.Errorf("-shrink-runs %d: want 1 to %d", o.ShrinkRuns, MaxShrinkRun)
	case o.Parallel < 0 || o.Parallel > MaxParallel:
		return fmt.Errorf("-parallel %d: want 1 to %d", o.Parallel, MaxParallel)
	case o.Search != "" && !slices.Contains(Searches, o.Search):
		return fmt.Errorf("-search %q: unknown (allowed: %s)", o.Search, strings.Join(Searches, ", "))
	}
	if o.Search == "" {
		o.Search = SearchRandom
	}
	if o.Parallel == 0 {
		o.Parallel = 1
	}
	k, err := ParseKnown(o.KnownViolations)
	if err != nil {
		return fmt.Errorf("-known: %v", err)
	}
	o.KnownViolations = k
	if o.Tries == 0 {
		o.Tries = 3
	}
	if o.RateRuns == 0 {
		o.RateRuns = 20
	}
	if o.ShrinkRuns == 0 {
		o.ShrinkRuns = 60
	}
	if o.Seed == 0 {
		o.Seed = time.Now().UnixNano() % 1e12
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return nil
}

// Exec runs one scenario and returns its outcome: the hunt's only way to
// reach nodes and workers (Runner is the real one).
type Exec func(ctx context.Context, sc *scenarios.Scenario) (*runner.Outcome, error)

// Runner is the Exec of a subject: runner.Prepare and runner.Run, each run
// in its own folder under dir, with the commands the lock sends seen.
func Runner(subj runner.Subject, opt runner.Options, dir string) Exec {
	return func(ctx context.Context, sc *scenarios.Scenario) (*runner.Outcome, error) {
		plan, err := runner.Prepare(ctx, sc, &subj, runner.Overrides{})
		if err != nil {
			return nil, err
		}
		o := opt
		o.ReportsDir = filepath.Join(dir, "runs")
		o.RunID = ""
		o.SeeCommands = true
		return runner.Run(ctx, plan, o)
	}
}

// Finding is one violation the hunt found and what shrinking made of it.
type Finding struct {
	Fingerprint Fingerprint
	Original    *Schedule
	OriginalDir string // the report folder of the run that found it
	Minimal     *Schedule
	MinimalDir  string // the report folder of a minimal run that failed
	MinimalYAML string // path of minimal.yaml
	Rate        [2]int // reproduced, runs
	ShrinkRuns  int
	ShrinkTime  time.Duration
	Flaky       bool // the original never reproduced while shrinking
	// Unstable are the rates measured before the minimal scenario got
	// more cycles ("14 of 20 with 2 cycles").
	Unstable []string
}

// Result is what a hunt did.
type Result struct {
	Lock         string
	Seed         int64
	Known        []string
	Tried        []*Schedule
	Inconclusive int // schedules whose run proved nothing (unknown) or failed
	Findings     []*Finding
	Started      time.Time
	Took         time.Duration
	Interrupted  bool
	Dir          string
	// UntilFound is the index of the schedule that found the first
	// violation (0: none): how many schedules were drawn up to it.
	UntilFound int
	// FoundAfter is the wall time from the start to that find.
	FoundAfter time.Duration
	Search     string
	Parallel   int
	// Coverage is the hunt's coverage over time: one point per run.
	Coverage []CoveragePoint
}

// Hunt draws schedules from its search (Options.Search) and runs them,
// Parallel at a time, until the budget is spent or a violation is found
// (with KeepGoing: collects the distinct ones), shrinks each to a minimal
// scenario and measures its reproduction rate. Every run's coverage is fed
// back to the search and recorded over time. An interrupted hunt keeps
// every finding it had.
func Hunt(ctx context.Context, sp *Space, exec Exec, opt Options) (*Result, error) {
	res := &Result{Lock: sp.Info.Name, Seed: opt.Seed, Known: opt.KnownViolations, Started: time.Now(), Dir: opt.Dir,
		Search: opt.Search, Parallel: max(opt.Parallel, 1)}
	search, err := NewSearch(opt.Search, sp, opt.Seed)
	if err != nil {
		return nil, err
	}
	deadline := time.Time{}
	if opt.Time > 0 {
		deadline = res.Started.Add(opt.Time)
	}
	defer func() { res.Took = time.Since(res.Started) }()
	runCtx, stopRuns := context.WithCancel(ctx)
	defer stopRuns()
	results := make(chan done, res.Parallel)
	handle := (&judge{sp: sp, res: res, search: search, log: opt.Log, found: map[string]bool{}}).handle
	inflight, drawn, stopping := 0, 0, false
	for {
		for !stopping && inflight < res.Parallel && (opt.Runs == 0 || drawn < opt.Runs) &&
			(deadline.IsZero() || time.Now().Before(deadline)) && ctx.Err() == nil {
			s := search.Next()
			drawn++
			res.Tried = append(res.Tried, s)
			sc := s.Compile(s.Name(), sp.Info.Name, []string{checker.ClassSafe})
			inflight++
			go func() {
				out, err := exec(runCtx, sc)
				results <- done{s, out, err}
			}()
		}
		if inflight == 0 {
			break
		}
		d := <-results
		inflight--
		if ctx.Err() != nil {
			res.Interrupted = true
			continue // wait for the others' clean-up
		}
		if runCtx.Err() != nil {
			// Stopped because another schedule found what the hunt was after:
			// never run to its end, it is not counted as tried.
			res.Tried = slices.DeleteFunc(res.Tried, func(x *Schedule) bool { return x == d.s })
			continue
		}
		fresh := handle(d.s, d.out, d.err)
		if len(fresh) == 0 {
			continue
		}
		if !opt.KeepGoing {
			stopping = true
			stopRuns()
		}
		// The schedules in flight end (or are stopped) before the shrinker
		// takes the machine; what they found is kept.
		fresh = append(fresh, drain(runCtx, results, inflight, res, handle)...)
		inflight = 0
		for _, f := range fresh {
			res.Findings = append(res.Findings, f)
			if err := finish(ctx, sp, exec, opt, f); err != nil {
				return res, err
			}
			if ctx.Err() != nil {
				res.Interrupted = true
				return res, nil
			}
		}
	}
	if ctx.Err() != nil {
		res.Interrupted = true
	}
	return res, nil
}

// done is a finished run of a schedule.
type done struct {
	s   *Schedule
	out *runner.Outcome
	err error
}

// judge judges the hunt's finished runs.
type judge struct {
	sp     *Space
	res    *Result
	search Search
	log    io.Writer
	found  map[string]bool // the violations some run of the hunt showed
}

// handle learns from a finished run and judges it: the violations no
// run of the hunt showed before.
func (j *judge) handle(s *Schedule, out *runner.Outcome, err error) []*Finding {
	if out != nil {
		j.sp.learn(out.Commands)
	}
	j.res.observe(j.search, s, out)
	var fps []Fingerprint
	u := "no result"
	if err != nil {
		u = err.Error()
	} else if out != nil {
		fps = Fingerprints(out.Result, j.sp.Info, s.TTL)
		u = Unjudged(out.Result, j.sp.Info, s.TTL)
	}
	if len(fps) == 0 && u != "" {
		// Nothing found counts only if the run proved something.
		j.res.Inconclusive++
		fmt.Fprintf(j.log, "schedule %d: inconclusive (%s)\n", s.Index, u)
		return nil
	}
	fmt.Fprintf(j.log, "schedule %d: %s: %s\n", s.Index, verdictOf(fps), joinOr(s.Faults(), "no fault"))
	var fresh []*Finding
	for _, fp := range fps {
		if j.found[fp.ID()] {
			continue
		}
		j.found[fp.ID()] = true
		if j.res.UntilFound == 0 {
			j.res.UntilFound, j.res.FoundAfter = s.Index, time.Since(j.res.Started)
		}
		fresh = append(fresh, &Finding{Fingerprint: fp, Original: s, OriginalDir: out.Dir})
		fmt.Fprintf(j.log, "found %s after %d schedules (%s): %s\n", fp.ID(), s.Index, out.Dir, fp.Detail)
	}
	return fresh
}

// drain waits for the n runs in flight and judges them, when the hunt was
// not stopped; a run stopped is not counted as tried.
func drain(runCtx context.Context, results <-chan done, n int, res *Result, handle func(*Schedule, *runner.Outcome, error) []*Finding) (fresh []*Finding) {
	for ; n > 0; n-- {
		o := <-results
		if runCtx.Err() != nil {
			res.Tried = slices.DeleteFunc(res.Tried, func(x *Schedule) bool { return x == o.s })
			continue
		}
		fresh = append(fresh, handle(o.s, o.out, o.err)...)
	}
	return fresh
}

// finish shrinks a finding and measures its minimal scenario's rate.
func finish(ctx context.Context, sp *Space, exec Exec, opt Options, f *Finding) error {
	f.Minimal = f.Original
	dir := filepath.Join(opt.Dir, slug(f.Fingerprint.ID()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if !opt.NoShrink {
		sh := &shrinker{sp: sp, exec: exec, opt: opt, id: f.Fingerprint.ID()}
		start := time.Now()
		f.Minimal, f.MinimalDir, f.Flaky = sh.shrink(ctx, f.Original)
		f.ShrinkRuns, f.ShrinkTime = sh.runs, time.Since(start)
		if err := sh.writeLog(filepath.Join(dir, "shrink.log")); err != nil {
			return err
		}
	}
	if f.MinimalDir == "" {
		f.MinimalDir = f.OriginalDir
	}
	// The rate over RateRuns runs; a scenario that reproduces in fewer than
	// 9 of 10 runs, but in some, gets more cycles (each cycle is another
	// chance: see stableCycles), up to MaxStableCycles, and is measured
	// again: every rate tried is logged, the last one is the scenario's. A
	// scenario that never reproduced is reported with its 0, not run again
	// with more cycles (a false-alarm hunt's flaky finding spent 40 minutes
	// of 4- and 8-cycle runs on it).
	for {
		f.Rate = rate(ctx, sp, exec, opt, f)
		fmt.Fprintf(opt.Log, "%s: minimal scenario (%d faults, was %d; %d cycles) reproduces in %d of %d runs\n",
			f.Fingerprint.ID(), len(f.Minimal.Events), len(f.Original.Events), f.Minimal.Cycles, f.Rate[0], f.Rate[1])
		if ctx.Err() != nil || f.Rate[0] == 0 || f.Rate[0]*10 >= f.Rate[1]*9 || f.Minimal.Cycles >= MaxStableCycles {
			break
		}
		f.Unstable = append(f.Unstable, fmt.Sprintf("%d of %d with %d cycles", f.Rate[0], f.Rate[1], f.Minimal.Cycles))
		m := f.Minimal.clone()
		m.Cycles = stableCycles(f.Rate, f.Minimal.Cycles)
		f.Minimal = m
	}
	path, err := writeMinimal(dir, sp.Info.Name, f)
	if err != nil {
		return err
	}
	f.MinimalYAML = path
	return nil
}

// MaxStableCycles bounds the cycles a minimal scenario gets for a stable
// reproduction rate.
const MaxStableCycles = 16

// stableCycles is how many cycles a scenario that reproduced in rate[0]
// of rate[1] runs of `cycles` cycles needs to reproduce in stableShare of
// runs, if each cycle shows the violation on its own with the same
// chance: a run of c cycles misses with (1-r)^(c/cycles), where r is the
// measured rate (0 < r < 1: finish asks only then). At least twice the
// cycles (a measurement that happened to be high still gets more
// chances), at most MaxStableCycles. broken-extend-any-master's minimum
// reproduced in 6 of 20 runs of 2 cycles, 11 of 4 and 14 of 8 (cycles
// doubled): about one cycle in six shows it, so 16 cycles are needed for
// 19 of 20.
func stableCycles(rate [2]int, cycles int) int {
	next := 2 * cycles
	if rate[0] > 0 && rate[0] < rate[1] {
		miss := 1 - float64(rate[0])/float64(rate[1])
		need := int(math.Ceil(float64(cycles) * math.Log(1-stableShare) / math.Log(miss)))
		next = max(next, need)
	}
	return min(next, MaxStableCycles)
}

// stableShare is the share of runs a minimal scenario's cycles are
// chosen to reproduce in: above the 18 of 20 a finding must reach, so a
// rate measured a little high still clears it.
const stableShare = 0.95

// rate runs a finding's minimal scenario RateRuns times, opt.Parallel at
// once as the schedules ran (serial, the rate of a 16-cycle scenario took
// 27 of a 30-minute hunt's minutes): in how many the violation showed.
func rate(ctx context.Context, sp *Space, exec Exec, opt Options, f *Finding) [2]int {
	var (
		r   [2]int
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, max(opt.Parallel, 1))
	)
	sc := f.Minimal.Compile(minimalName(f), sp.Info.Name, []string{f.Fingerprint.Class})
	for i := 0; i < opt.RateRuns && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out, err := exec(ctx, sc)
			hit := err == nil && out != nil && has(Fingerprints(out.Result, sp.Info, f.Minimal.TTL), f.Fingerprint.ID())
			mu.Lock()
			defer mu.Unlock()
			r[1]++
			if hit {
				r[0]++
			}
		}()
	}
	wg.Wait()
	return r
}

func verdictOf(fps []Fingerprint) string {
	if len(fps) == 0 {
		return "nothing found"
	}
	var ids []string
	for _, f := range fps {
		ids = append(ids, f.ID())
	}
	return "VIOLATION " + joinOr(ids, "")
}

// learn adds the command shapes a run saw to the space. A script's two
// forms are one shape (scriptForms): a client sends EVAL only when the node
// does not have the script yet (once per node, or after a restart), so an
// anchor on EVAL alone seldom fired (the false-alarm hunt of fenced, seed
// 23: one schedule in ten never began its faults, "not exercised").
func (sp *Space) learn(cmds []resp.Shape) {
	for _, c := range cmds {
		c.Client = "" // an anchor matches the command of any client
		c.Name = scriptForms(c.Name)
		if c.Op == "" || slices.Contains(sp.Commands, c) {
			continue
		}
		if len(sp.Commands) < maxShapes {
			sp.Commands = append(sp.Commands, c)
		}
	}
}

const maxShapes = 64

// scriptForms names both forms of a script's call ("EVAL|EVALSHA", a
// command match's alternatives) for either; other names are as they are.
func scriptForms(name string) string {
	switch name {
	case "EVAL", "EVALSHA":
		return "EVAL|EVALSHA"
	case "EVAL_RO", "EVALSHA_RO":
		return "EVAL_RO|EVALSHA_RO"
	}
	return name
}

// Run hunts a subject: its known limits are the promise table's (a built-in
// lock's) and opt.KnownViolations; every run goes under opt.Dir (default
// <reports>/hunt/<lock>/<run id>), with the hunt's card.md and hunt.json.
func Run(ctx context.Context, subj runner.Subject, opt Options) (*Result, error) {
	if err := opt.Check(); err != nil {
		return nil, err
	}
	known := opt.KnownViolations
	if subj.Shipped || !subj.External() {
		// A lock lockfault ships (built in, or a published library served by
		// lockfault-ext) has its row in the promise table.
		known, _ = ParseKnown(append(BuiltInLimits(subj.Name()), known...))
	}
	opt.KnownViolations = known
	if opt.Dir == "" {
		root := opt.Run.ReportsDir
		if root == "" {
			root = "reports"
		}
		opt.Dir = filepath.Join(root, "hunt", subj.Name(), runner.NewRunID())
	}
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintf(opt.Log, "hunt %s: seed %d, known limits %s, folder %s\n", subj.Name(), opt.Seed, joinOr(known, "none"), opt.Dir)
	res, err := Hunt(ctx, NewSpace(subj.Info, known), Runner(subj, opt.Run, opt.Dir), opt)
	if res != nil {
		if werr := WriteCard(res); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	return res, err
}
