package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/scenarios"
)

func cmdRun(args []string, stdout, stderr io.Writer) int {
	f := newFlags("run", "<scenario|file.yaml>", stdout, stderr)
	var opt runner.Options
	var ov runner.Overrides
	backend := f.backend()
	lock := f.String("lock", "", "run the scenario with this lock instead of its own (see `simulate list`; NAME+OPTION=VALUE also sets a lock option)")
	f.StringVar(&ov.Variant, "variant", "", "run this variant of the scenario")
	workerLine := f.String("worker", "", "start this command as every client's worker instead of the built-in one: it speaks docs/PROTOCOL.md and declares its lock (split into words like a shell would; no shell runs it)")
	f.IntVar(&ov.Cycles, "cycles", 0, "number of fault cycles (default: the scenario's; 1 to 1000)")
	f.Int64Var(&ov.Seed, "seed", 0, "seed for a random nemesis (default: the scenario's, else the time)")
	f.StringVar(&opt.ReportsDir, "reports", "reports", "where report folders go")
	quiet := f.Bool("q", false, "print only the run line and the summary")
	packages := f.Bool("packages", false, "print the Debian packages the scenario's servers (and -worker's interpreter) come in, on one line, and exit: nothing runs (make scenario installs them)")
	needsExt := f.Bool("needs-ext", false, "print yes when the run needs bin/lockfault-ext (its lock, from -lock, -variant or the scenario, is a published library's), else no, and exit: nothing runs (make scenario builds lockfault-ext only then)")
	pos, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return f.fail("want exactly one scenario name or file, got %d (%s)\nscenarios: %s", len(pos), strings.Join(pos, " "), strings.Join(scenarios.Names(), ", "))
	}
	if f.set("cycles") && (ov.Cycles < 1 || ov.Cycles > scenarios.MaxCycles) {
		return f.fail("-cycles %d: want 1 to %d", ov.Cycles, scenarios.MaxCycles)
	}
	opt.Backend = *backend
	ctx, stop := interruptible()
	defer stop()
	defer writeIndex(opt.ReportsDir, stderr)
	sc, err := runner.Load(pos[0])
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if *packages {
		fmt.Fprintln(stdout, strings.Join(runner.Packages(sc, *workerLine), " "))
		return 0
	}
	if *needsExt {
		answer, err := needsExtAnswer(sc, ov.Variant, *lock, *workerLine)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		fmt.Fprintln(stdout, answer)
		return 0
	}
	subj, err := optionalSubject(ctx, *lock, *workerLine)
	if err != nil {
		return f.fail("%v", err)
	}
	if subj != nil && subj.External() && !*quiet {
		fmt.Fprintln(stderr, describeSubject(*subj))
	}
	plan, err := runner.Prepare(ctx, sc, subj, ov)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if opt.Backend == cluster.BackendProcess {
		// A missing server, named with its package before the run's folder
		// is made (the runner checks again, for auto).
		if err := cluster.CheckPrograms(runner.Programs(plan.Scenario)...); err != nil {
			return f.fail("%v", err)
		}
	}
	if *lock != "" && ov.Variant == "" {
		fmt.Fprintln(stdout, variantNote(*lock, sc.Name, plan))
	}
	if !*quiet {
		opt.Log = stderr
	}
	return runPlan(ctx, plan, opt, stdout, stderr)
}

// runPlan runs a prepared plan: it prints the run line (id and report
// folder) before the run starts and the summary after, and returns the
// run's exit code.
func runPlan(ctx context.Context, plan *runner.Plan, opt runner.Options, stdout, stderr io.Writer) int {
	opt.RunID = runner.NewRunID()
	fmt.Fprintf(stdout, "run %s  report folder %s\n", opt.RunID, runner.ReportDir(opt, plan.Scenario, opt.RunID))
	out, err := runner.Run(ctx, plan, opt)
	if out != nil {
		fmt.Fprintln(stdout, out.Summary)
	}
	if err != nil {
		fmt.Fprintln(stderr, "simulate run:", err)
	}
	return runner.Code(out, err)
}

// needsExtAnswer is -needs-ext's answer: yes when the run's lock (from
// -lock, else the variant's or the scenario's) is a published library's,
// served by lockfault-ext; no for lockfault's own lock or a worker's.
func needsExtAnswer(sc *scenarios.Scenario, variant, lock, workerLine string) (string, error) {
	s := sc
	if variant != "" {
		var err error
		if s, err = sc.WithVariant(variant); err != nil {
			return "", err
		}
	}
	name := s.Lock.Name
	if lock != "" {
		name = lock
	}
	name, _, _ = strings.Cut(name, "+")
	if _, builtIn := lockimpl.Lookup(name); builtIn || workerLine != "" {
		return "no", nil // lockfault's own lock, or a worker's
	}
	return "yes", nil
}

// optionalSubject is the lock -lock or -worker names; nil when neither is
// given (the scenario's own lock runs).
func optionalSubject(ctx context.Context, lock, workerLine string) (*runner.Subject, error) {
	if lock == "" && workerLine == "" {
		return nil, nil
	}
	s, err := runner.Resolve(ctx, lock, workerLine)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// variantNote says which schedule -lock chose: a variant made for the lock,
// or the base.
func variantNote(lock, scenario string, plan *runner.Plan) string {
	if plan.ByLock {
		return fmt.Sprintf("-lock %s selects variant %q of %s: its schedule and expectation apply, not the base's", lock, plan.Scenario.Variant, scenario)
	}
	return fmt.Sprintf("-lock %s: no variant of %s uses it: the base schedule and expectation apply, with lock %s", lock, scenario, lock)
}

// describeSubject is the line that says what an external worker declared.
func describeSubject(s runner.Subject) string {
	return fmt.Sprintf("worker %s: lock %s, needs %s, caps [%s], failpoints [%s]", s.Worker(),
		s.Name(), s.Info.Needs, strings.Join(s.Info.Caps, " "), strings.Join(s.Info.Failpoints, " "))
}

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	return recheck("check", args, stdout, stderr)
}
func cmdReport(args []string, stdout, stderr io.Writer) int {
	return recheck("report", args, stdout, stderr)
}

func recheck(which string, args []string, stdout, stderr io.Writer) int {
	f := newFlags(which, "<report-dir>", stdout, stderr)
	linTimeout := f.Duration("lin-timeout", checker.DefaultLinearizabilityTimeout, "bound on the whole linearizability check; when it runs out the verdict is unknown (1s to 1h)")
	pos, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return f.fail("want one report folder (reports/<scenario>/<run-id>)")
	}
	if *linTimeout < time.Second || *linTimeout > time.Hour {
		return f.fail("-lin-timeout %v (allowed: 1s to 1h)", *linTimeout)
	}
	limitMemory()
	out, err := runner.Recheck(pos[0], *linTimeout, which == "report")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	fmt.Fprintln(stdout, out.Summary)
	if runner.Unjudged(out) {
		// A history that cannot be judged is never a pass.
		fmt.Fprintf(stderr, "simulate %s: the history cannot be judged: %s\n", which, out.Result.Reason)
	}
	return runner.Code(out, nil)
}
