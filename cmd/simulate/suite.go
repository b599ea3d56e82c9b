package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/reports"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/suite"
)

// cmdSuite runs the property suite against one lock and prints its report
// card; with -baseline it is a regression gate.
func cmdSuite(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opt runner.SuiteOptions
	fs.StringVar(&opt.Lock, "lock", "", "the lock to test: a built-in (see simulate list), or with -worker the name the worker should declare")
	worker := fs.String("worker", "", "start this command as every client's worker instead of the built-in one: it speaks docs/PROTOCOL.md and declares its lock (split into words like a shell would; no shell runs it)")
	fs.StringVar(&opt.Backend, "backend", "auto", "node backend: docker, process or auto (docker when an engine answers)")
	fs.IntVar(&opt.Parallel, "parallel", 2, "properties run at the same time (1 to 8)")
	baseline := fs.String("baseline", "", "compare with this baseline: exit 1 when a property that held now fails")
	writeBaseline := fs.String("write-baseline", "", "write this run's outcomes to this baseline file")
	fs.BoolVar(&opt.Short, "short", false, "half the fault cycles of every property")
	fs.IntVar(&opt.Cycles, "cycles", 0, "override every property's number of fault cycles")
	fs.StringVar(&opt.ReportsDir, "reports", "reports", "report root: the card goes to <reports>/suite/<lock>/<run-id>/")
	only := fs.String("only", "", "comma-separated property names or prefixes to run (default: all)")
	skip := fs.String("skip", "", "comma-separated property names or prefixes not to run")
	timeout := fs.Duration("timeout", runner.SuiteTimeout, "bound on each property's run")
	list := fs.Bool("list", false, "list the properties (with -lock: which apply) and exit")
	verbose := fs.Bool("v", false, "print each run's progress lines")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "simulate suite: unexpected argument %q (flags only)\n", fs.Arg(0))
		return 2
	}
	if *list {
		return listProperties(opt.Lock, stdout, stderr)
	}
	switch opt.Backend {
	case "auto", "docker", "process":
	default:
		fmt.Fprintf(stderr, "simulate suite: -backend %q is not allowed (allowed: docker, process, auto)\n", opt.Backend)
		return 2
	}
	if opt.Parallel < 1 || opt.Parallel > 8 {
		fmt.Fprintf(stderr, "simulate suite: -parallel %d: want 1 to 8\n", opt.Parallel)
		return 2
	}
	if opt.Cycles < 0 || opt.Cycles > 1000 {
		fmt.Fprintf(stderr, "simulate suite: -cycles %d: want 0 (the property's own) to 1000\n", opt.Cycles)
		return 2
	}
	if *timeout < time.Second || *timeout > 24*time.Hour {
		fmt.Fprintf(stderr, "simulate suite: -timeout %v: want 1s to 24h\n", *timeout)
		return 2
	}
	opt.Timeout = *timeout
	opt.Only, opt.Skip = splitList(*only), splitList(*skip)
	if *worker == "" && opt.Lock == "" {
		fmt.Fprintf(stderr, "simulate suite: -lock is required, or -worker (locks: %s)\n", strings.Join(lockimpl.Names(), ", "))
		return 2
	}
	if *worker == "" {
		info, ok := lockimpl.Lookup(opt.Lock)
		if !ok {
			fmt.Fprintf(stderr, "simulate suite: -lock: unknown lock %q (known: %s)\n", opt.Lock, strings.Join(lockimpl.Names(), ", "))
			return 2
		}
		opt.Info = info
	}
	if _, _, err := runner.SelectProperties(opt.Info, opt.Only, opt.Skip); err != nil {
		fmt.Fprintf(stderr, "simulate suite: %v\n", err)
		return 2
	}
	// The baseline is read before anything starts.
	var base *card.Baseline
	if *baseline != "" {
		var err error
		base, err = card.ReadBaseline(*baseline, func(p string) bool { _, ok := suite.Lookup(p); return ok })
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
	}
	if *verbose {
		opt.Log = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if *worker != "" {
		// An external worker: its lock is what it declares in ready.
		argv, err := runner.SplitCommand(*worker)
		if err != nil {
			fmt.Fprintln(stderr, "simulate suite:", err)
			return 2
		}
		info, err := runner.Describe(ctx, argv, opt.Lock)
		if err != nil {
			fmt.Fprintln(stderr, "simulate suite: -worker:", err)
			return 2
		}
		opt.WorkerCommand, opt.WorkerInfo, opt.Info, opt.Lock = argv, &info, info, info.Name
		fmt.Fprintf(stdout, "worker %s: lock %s, needs %s, caps [%s], failpoints [%s]\n", runner.JoinCommand(argv),
			info.Name, info.Needs, strings.Join(info.Caps, " "), strings.Join(info.Failpoints, " "))
	}
	c, dir, err := runner.RunSuite(ctx, opt, func(done, total int, r card.Row) {
		w := len(fmt.Sprint(total))
		line := fmt.Sprintf("[%*d/%d] %-28s %s", w, done, total, r.Property, r.Summary())
		if r.Duration > 0 {
			line += fmt.Sprintf("  (%v)", r.Duration.Round(time.Second))
		}
		if r.Outcome == card.Violated || r.Outcome == card.HarnessError {
			if r.Report != "" {
				line += "\n      report: " + r.Report
			}
		}
		fmt.Fprintln(stdout, line)
	})
	if c == nil {
		fmt.Fprintf(stderr, "simulate suite: %v\n", err)
		return 2
	}
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, c.Text())
	fmt.Fprintf(stdout, "card: %s/suite.md (suite.html, suite.png, suite.json, junit.xml)\n", dir)
	code := 0
	if err != nil {
		fmt.Fprintf(stderr, "simulate suite: %v\n", err)
		code = 2
	}
	if ctx.Err() != nil {
		code = 2
	}
	if base != nil {
		d := base.Compare(c)
		fmt.Fprint(stdout, d.Text(*baseline))
		code = max(code, d.Exit())
	} else {
		switch {
		case c.Count(card.HarnessError) > 0:
			code = 2
		case opt.WorkerCommand == nil && isBuiltin(c.Lock):
			// A built-in lock is held to the promise table: its known
			// weaknesses are expected violations.
			if promiseDiffs(c, stdout) > 0 {
				code = max(code, 1)
			}
		case c.Count(card.Violated) > 0:
			code = max(code, 1)
		}
	}
	if *writeBaseline != "" {
		if err := card.WriteBaseline(*writeBaseline, c); err != nil {
			fmt.Fprintf(stderr, "simulate suite: -write-baseline: %v\n", err)
			return 2
		}
		fmt.Fprintf(stdout, "baseline written to %s\n", *writeBaseline)
	}
	return code
}

// listProperties prints the suite, and for a lock which properties apply.
func listProperties(lock string, stdout, stderr io.Writer) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	var info lockimpl.Info
	if lock != "" {
		var ok bool
		if info, ok = lockimpl.Lookup(lock); !ok {
			fmt.Fprintf(stderr, "simulate suite: -lock: unknown lock %q (known: %s)\n", lock, strings.Join(lockimpl.Names(), ", "))
			return 2
		}
		fmt.Fprintln(tw, "PROPERTY\tNEEDS\tREQUIRES\tFOR "+lock+"\tPROMISE")
	} else {
		fmt.Fprintln(tw, "PROPERTY\tNEEDS\tREQUIRES\tPROMISE")
	}
	for _, p := range suite.All() {
		needs, req := strings.Join(p.Needs, ","), p.Requires
		if p.Failpoint != "" {
			req = strings.TrimPrefix(req+",failpoint "+p.Failpoint, ",")
		}
		if needs == "" {
			needs = "any"
		}
		if req == "" {
			req = "-"
		}
		if lock != "" {
			verdict := "runs"
			if ok, why := p.Applies(info); !ok {
				verdict = "not claimed (" + why + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, needs, req, verdict, p.Explanation)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, needs, req, p.Explanation)
		}
	}
	tw.Flush()
	return 0
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// cmdCards runs the suite against several locks (default: every built-in
// one), one after the other, and writes each card plus the side-by-side
// table lock × property (cards.md and cards.png).
func cmdCards(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cards", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opt runner.SuiteOptions
	locks := fs.String("locks", "", "comma-separated locks (default: every built-in lock)")
	fs.StringVar(&opt.Backend, "backend", "auto", "node backend: docker, process or auto")
	fs.IntVar(&opt.Parallel, "parallel", 2, "properties run at the same time (1 to 8)")
	fs.BoolVar(&opt.Short, "short", false, "half the fault cycles of every property")
	fs.IntVar(&opt.Cycles, "cycles", 0, "override every property's number of fault cycles")
	fs.StringVar(&opt.ReportsDir, "reports", "reports", "report root: each card goes to <reports>/suite/<lock>/<run-id>/")
	only := fs.String("only", "", "comma-separated property names or prefixes to run (default: all)")
	skip := fs.String("skip", "", "comma-separated property names or prefixes not to run")
	md := fs.String("out", "cards.md", "the table in markdown; the PNG goes beside it")
	var workers []string
	fs.Func("worker", "also the lock of this external worker (repeatable; see simulate suite -worker)", func(s string) error {
		workers = append(workers, s)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "simulate cards: unexpected argument %q (flags only)\n", fs.Arg(0))
		return 2
	}
	switch opt.Backend {
	case "auto", "docker", "process":
	default:
		fmt.Fprintf(stderr, "simulate cards: -backend %q is not allowed (allowed: docker, process, auto)\n", opt.Backend)
		return 2
	}
	if opt.Parallel < 1 || opt.Parallel > 8 {
		fmt.Fprintf(stderr, "simulate cards: -parallel %d: want 1 to 8\n", opt.Parallel)
		return 2
	}
	names := splitList(*locks)
	if len(names) == 0 {
		names = lockimpl.Names()
	}
	type subject struct {
		info lockimpl.Info
		argv []string // external worker
	}
	var subjects []subject
	for _, n := range names {
		info, ok := lockimpl.Lookup(n)
		if !ok {
			fmt.Fprintf(stderr, "simulate cards: -locks: unknown lock %q (known: %s)\n", n, strings.Join(lockimpl.Names(), ", "))
			return 2
		}
		subjects = append(subjects, subject{info: info})
	}
	opt.Only, opt.Skip = splitList(*only), splitList(*skip)
	if _, _, err := runner.SelectProperties(lockimpl.Info{}, opt.Only, opt.Skip); err != nil {
		fmt.Fprintf(stderr, "simulate cards: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	for _, w := range workers {
		argv, err := runner.SplitCommand(w)
		if err != nil {
			fmt.Fprintln(stderr, "simulate cards:", err)
			return 2
		}
		info, err := runner.Describe(ctx, argv, "")
		if err != nil {
			fmt.Fprintln(stderr, "simulate cards: -worker:", err)
			return 2
		}
		subjects = append(subjects, subject{info, argv})
	}
	var cards []*card.Card
	var dirs []string
	code := 0
	for _, sub := range subjects {
		if ctx.Err() != nil {
			break
		}
		info := sub.info
		o := opt
		o.Lock, o.Info = info.Name, info
		if sub.argv != nil {
			o.WorkerCommand, o.WorkerInfo = sub.argv, &info
		}
		c, dir, err := runner.RunSuite(ctx, o, func(done, total int, r card.Row) {
			fmt.Fprintf(stdout, "%-16s [%*d/%d] %-28s %s\n", info.Name, len(fmt.Sprint(total)), done, total, r.Property, r.Summary())
		})
		if err != nil {
			fmt.Fprintf(stderr, "simulate cards: %s: %v\n", info.Name, err)
			code = 2
		}
		if c == nil {
			continue
		}
		fmt.Fprintf(stdout, "%-16s %s in %v: %s\n", info.Name, c.Tally(), c.Duration.Round(time.Second), dir)
		if c.Count(card.HarnessError) > 0 {
			code = 2
		}
		cards, dirs = append(cards, c), append(dirs, dir)
	}
	// The table links with paths relative to it; the cards hold paths
	// relative to their own folders.
	for i, c := range cards {
		rel := *c
		rel.Rows = append([]card.Row(nil), c.Rows...)
		for j := range rel.Rows {
			if r, err := filepath.Rel(dirs[i], rel.Rows[j].Report); err == nil && rel.Rows[j].Report != "" {
				rel.Rows[j].Report = r
			}
		}
		cards[i] = &rel
	}
	// The built-in locks' outcomes are checked against the promise table.
	expected := map[[2]string]card.Outcome{}
	mismatches := 0
	for _, c := range cards {
		if c.Worker != "" {
			continue
		}
		info, ok := lockimpl.Lookup(c.Lock)
		if !ok {
			continue
		}
		for _, r := range c.Rows {
			p, ok := suite.Lookup(r.Property)
			if !ok {
				continue
			}
			exp, _ := suite.Expected(info, p)
			expected[[2]string{c.Lock, r.Property}] = card.Outcome(exp)
			if card.Outcome(exp) != r.Outcome {
				mismatches++
				fmt.Fprintf(stdout, "%-16s %-28s expected %s by the promise table, got %s\n", c.Lock, r.Property, exp, r.Summary())
			}
		}
	}
	png := strings.TrimSuffix(*md, filepath.Ext(*md)) + ".png"
	if err := reports.WriteCardsTable(*md, png, cards, dirs, expected); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	fmt.Fprintf(stdout, "%d cards, %d outcome(s) differ from the promise table; wrote %s and %s\n", len(cards), mismatches, *md, png)
	if ctx.Err() != nil {
		return 2
	}
	if code == 0 && mismatches > 0 {
		code = 1
	}
	return code
}

// isBuiltin: the lock is registered in this binary (not a test's).
func isBuiltin(name string) bool {
	_, ok := lockimpl.Lookup(name)
	return ok
}

// promiseDiffs prints how a built-in lock's card compares with the promise
// table (suite.Expected) and returns the number of differences.
func promiseDiffs(c *card.Card, w io.Writer) int {
	info, _ := lockimpl.Lookup(c.Lock)
	n := 0
	for _, r := range c.Rows {
		p, ok := suite.Lookup(r.Property)
		if !ok {
			continue
		}
		exp, why := suite.Expected(info, p)
		switch {
		case card.Outcome(exp) != r.Outcome:
			n++
			fmt.Fprintf(w, "DIFFERS from the promise table: %s expected %s, got %s\n", r.Property, exp, r.Outcome.Text())
		case r.Outcome == card.Violated:
			fmt.Fprintf(w, "violated as the promise table expects: %s (%s)\n", r.Property, why)
		}
	}
	if n == 0 {
		fmt.Fprintf(w, "every outcome is the one the promise table expects for %s\n", c.Lock)
	}
	return n
}
