package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/pages"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/suite"
)

// suiteFlags are the flags suite and cards share.
func suiteFlags(f *flags, opt *suite.Options) func() error {
	backend := f.backend()
	f.IntVar(&opt.Parallel, "parallel", suite.DefaultParallel, fmt.Sprintf("properties run at the same time (1 to %d)", suite.MaxParallel))
	f.BoolVar(&opt.Short, "short", false, "half the fault cycles of every property")
	f.IntVar(&opt.Cycles, "cycles", 0, "override every property's number of fault cycles (0: their own)")
	f.StringVar(&opt.Run.ReportsDir, "reports", "reports", "report root: each card goes to <reports>/suite/<lock>/<run-id>/")
	only := f.String("only", "", "comma-separated property names or prefixes to run (default: all)")
	skip := f.String("skip", "", "comma-separated property names or prefixes not to run")
	f.DurationVar(&opt.Timeout, "timeout", suite.Timeout, "bound on each property's run")
	return func() error {
		opt.Run.Backend, opt.Only, opt.Skip = *backend, list(*only), list(*skip)
		if opt.Parallel < 1 {
			return fmt.Errorf("-parallel %d: want 1 to %d", opt.Parallel, suite.MaxParallel)
		}
		return opt.Check()
	}
}

// cmdSuite runs the property suite against one lock and prints its report
// card; with -baseline it is a regression gate.
func cmdSuite(args []string, stdout, stderr io.Writer) int {
	f := newFlags("suite", "", stdout, stderr)
	var opt suite.Options
	done := suiteFlags(f, &opt)
	lock := f.String("lock", "", "the lock to test: a built-in (see simulate list; NAME+OPTION=VALUE sets a lock option in every property), or with -worker the name the worker should declare")
	workerLine := f.String("worker", "", "start this command as every client's worker instead of the built-in one: it speaks docs/PROTOCOL.md and declares its lock (split into words like a shell would; no shell runs it)")
	baseline := f.String("baseline", "", "compare with this baseline: exit 1 when a property that held now fails")
	writeBaseline := f.String("write-baseline", "", "write this run's outcomes to this baseline file")
	listOnly := f.Bool("list", false, "list the properties (with -lock: which apply) and exit")
	extra := f.String("extra", "", "comma-separated scenario files or folders (a hunt's finding: reports/hunt/...) to run beside the properties, each a row extra/<name> that holds when the run is safe")
	verbose := f.Bool("v", false, "print each run's progress lines")
	if code, ok := f.noArgs(args); !ok {
		return code
	}
	if err := done(); err != nil {
		return f.fail("%v", err)
	}
	ctx, stop := interruptible()
	defer stop()
	if *listOnly {
		return listProperties(f, *lock, stdout)
	}
	defer writeIndex(opt.Run.ReportsDir, stderr)
	var err error
	if opt.Extra, err = suite.LoadExtra(list(*extra)); err != nil { // read before anything starts
		return f.fail("%v", err)
	}
	base, err := readBaseline(*baseline)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	subj, err := runner.Resolve(ctx, *lock, *workerLine)
	if err != nil {
		return f.fail("%v", err)
	}
	if subj.External() && !subj.Shipped {
		fmt.Fprintln(stdout, describeSubject(subj))
	}
	if *verbose {
		opt.Run.Log = stderr
	}
	c, dir, err := suite.Run(ctx, subj, opt, func(done, total int, r card.Row) {
		fmt.Fprintln(stdout, progressLine(done, total, r))
	})
	if c == nil {
		return f.fail("%v", err)
	}
	fmt.Fprintf(stdout, "\n%scard: %s/suite.md (suite.html, suite.png, suite.json, junit.xml)\n", c.Text(), dir)
	code, text := suite.Gate(c, subj, base, *baseline)
	fmt.Fprint(stdout, text)
	if err != nil || ctx.Err() != nil {
		f.fail("%v", err)
		code = 2
	}
	if *writeBaseline != "" {
		if err := card.WriteBaseline(*writeBaseline, c); err != nil {
			return f.fail("-write-baseline: %v", err)
		}
		fmt.Fprintf(stdout, "baseline written to %s\n", *writeBaseline)
	}
	return code
}

// readBaseline reads -baseline ("": none), whose rows must name
// properties of the suite or extra scenarios.
func readBaseline(path string) (*card.Baseline, error) {
	if path == "" {
		return nil, nil
	}
	return card.ReadBaseline(path, func(p string) bool { _, ok := suite.Lookup(p); return ok || suite.IsExtra(p) })
}

func progressLine(done, total int, r card.Row) string {
	line := fmt.Sprintf("[%*d/%d] %-28s %s", len(fmt.Sprint(total)), done, total, r.Property, r.Summary())
	if r.Duration > 0 {
		line += fmt.Sprintf("  (%v)", r.Duration.Round(time.Second))
	}
	if (r.Outcome == card.Violated || r.Outcome == card.HarnessError) && r.Report != "" {
		line += "\n      report: " + r.Report
	}
	return line
}

// listProperties prints the suite, and for a lock which properties apply.
func listProperties(f *flags, lock string, stdout io.Writer) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	var subj runner.Subject
	if lock != "" {
		var err error
		if subj, err = runner.BuiltIn(context.Background(), lock); err != nil {
			return f.fail("-lock: %v", err)
		}
		fmt.Fprintln(tw, "PROPERTY\tNEEDS\tREQUIRES\tFOR "+lock+"\tPROMISE")
	} else {
		fmt.Fprintln(tw, "PROPERTY\tNEEDS\tREQUIRES\tPROMISE")
	}
	for _, p := range suite.All() {
		needs, req := "any", p.Requirement()
		if len(p.Needs) > 0 {
			needs = fmt.Sprint(p.Needs)
		}
		if lock == "" {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, needs, req, p.Explanation)
			continue
		}
		verdict := "runs"
		if ok, why := p.Applies(subj.Info); !ok {
			verdict = "not claimed (" + why + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, needs, req, verdict, p.Explanation)
	}
	tw.Flush()
	return 0
}

// cmdCards runs the suite against several locks (default: every lock
// lockfault ships), one after the other, and writes each card plus the
// lock × property table (cards.md and cards.png).
func cmdCards(args []string, stdout, stderr io.Writer) int {
	f := newFlags("cards", "", stdout, stderr)
	var opt suite.Options
	done := suiteFlags(f, &opt)
	locks := f.String("locks", "", "comma-separated locks, each NAME or NAME+OPTION=VALUE (default: every lock lockfault ships, and those with a safety option on; -locks '' with -worker: the workers' locks alone)")
	md := f.String("out", "cards.md", "the table in markdown; the PNG goes beside it")
	summary := f.String("summary", "", "also write a page of what was measured, with versions and one finding per property not held, that links nothing (make cards: docs/CARDS.md)")
	readme := f.String("readme", "", "with -summary: also rewrite this README's cards block (its generated:cards markers) from that page (make cards: README.md)")
	extra := f.String("extra", "", "comma-separated scenario files or folders (a library's regressions: examples/<worker>/regressions) to run beside the properties, each on the card of the lock its scenario names (lock.name) as a row extra/<name> that holds when the run is safe")
	add := f.Bool("add", false, "with -summary: replace only the rows and findings of the locks this run measured in its backend's section, keeping every other lock's (card a new lock without running every lock again)")
	var workers []string
	f.Func("worker", "also the lock of this external worker (repeatable; see simulate suite -worker)", func(s string) error {
		workers = append(workers, s)
		return nil
	})
	if code, ok := f.noArgs(args); !ok {
		return code
	}
	if err := done(); err != nil {
		return f.fail("%v", err)
	}
	if err := pages.CheckCardsReadme(*readme, *summary); err != nil {
		return f.fail("-readme: %v", err)
	}
	if *add && *summary == "" {
		return f.fail("-add: give -summary, the page whose rows it replaces")
	}
	none := false // -locks given empty: no lock lockfault ships
	f.Visit(func(fl *flag.Flag) { none = none || fl.Name == "locks" && *locks == "" })
	if none && len(workers) == 0 {
		return f.fail("-locks: empty and no -worker: nothing to measure (leave -locks out for every lock lockfault ships)")
	}
	var err error
	if opt.Extra, err = suite.LoadExtra(list(*extra)); err != nil { // read before anything starts
		return f.fail("%v", err)
	}
	ctx, stop := interruptible()
	defer stop()
	defer writeIndex(opt.Run.ReportsDir, stderr)
	subjects, err := cardSubjects(ctx, list(*locks), !none, workers)
	if err != nil {
		return f.fail("%v", err)
	}
	res, err := suite.Cards(ctx, subjects, opt, *md, func(s runner.Subject, done, total int, r card.Row) {
		fmt.Fprintf(stdout, "%-16s [%*d/%d] %-28s %s\n", s.Label(), len(fmt.Sprint(total)), done, total, r.Property, r.Summary())
	})
	for i, c := range res.Cards {
		fmt.Fprintf(stdout, "%-16s %s in %v: %s\n", c.Lock, c.Tally(), c.Duration.Round(time.Second), res.Dirs[i])
	}
	for _, d := range res.Differ {
		fmt.Fprintln(stdout, d)
	}
	if err != nil {
		return f.fail("%v", err)
	}
	if *summary != "" {
		write := pages.WriteCardsSummary
		if *add {
			write = pages.AddCardsSummary
		}
		if err := write(*summary, opt.Run.Backend.String(), res.Cards, res.Differ); err != nil {
			return f.fail("-summary: %v", err)
		}
	}
	if *readme != "" {
		if err := pages.WriteCardsReadme(*readme, *summary); err != nil {
			return f.fail("-readme: %v", err)
		}
	}
	fmt.Fprintf(stdout, "%d cards, %d outcome(s) differ from the promise table; wrote %s and %s\n", len(res.Cards), len(res.Differ), *md, strings.TrimSuffix(*md, ".md")+".png")
	return res.Exit()
}

// cardSubjects resolves what simulate cards measures: the named locks (with
// none named and defaults, every lock lockfault ships, each followed by its
// safety options on), then the external workers' locks.
func cardSubjects(ctx context.Context, names []string, defaults bool, workers []string) ([]runner.Subject, error) {
	if len(names) == 0 && defaults {
		for _, n := range runner.KnownLocks(ctx) {
			names = append(names, n)
			for _, r := range suite.RemedyLocks() {
				if strings.HasPrefix(r, n+"+") {
					names = append(names, r)
				}
			}
		}
	}
	var subjects []runner.Subject
	for _, n := range names {
		s, err := runner.BuiltIn(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("-locks: %w", err)
		}
		subjects = append(subjects, s)
	}
	for _, w := range workers {
		s, err := runner.Resolve(ctx, "", w)
		if err != nil {
			return nil, err
		}
		subjects = append(subjects, s)
	}
	return subjects, nil
}
