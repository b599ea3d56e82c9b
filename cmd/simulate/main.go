// Command simulate is lockfault's command line: run a scenario, re-check or
// re-report a recorded history, list scenarios, locks and faults, and clean
// up what a killed run left behind.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/faults"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/reports"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/scenarios"
	"github.com/lockfault/lockfault/worker"
)

const usage = `usage: simulate <command> [flags]

commands:
  run <scenario|file.yaml>   run a scenario; exit 0 if the verdict matched, 1 if not, 2 if the harness failed
                             (-worker 'COMMAND ...': test your own lock through an external worker)
  check <report-dir>         re-check a recorded history.jsonl and print the verdict; exit 2 if it cannot be judged (unknown)
  report <report-dir>        re-check and rewrite the report files from history.jsonl (same exit codes as check)
  suite -lock NAME           run the property suite against one lock: its report card, junit.xml, a baseline gate
  cards [-locks a,b]         the suite against every built-in lock: each card and a lock × property table (cards.md, cards.png)
  claims                     run the whole catalogue (every claim, every variant) and write claims.md and claims.png
  list                       list scenarios, locks and faults
  clean                      remove containers, networks and temp dirs left by killed runs
`

func main() {
	if worker.IsWorker() {
		worker.Main()
		return
	}
	// A closed stdout (`simulate run … | head -3`) must not kill the harness
	// mid-run with SIGPIPE, which would leave its nodes' temp dir behind: with
	// a handler installed, writes to the closed pipe fail with EPIPE instead
	// and the run finishes and cleans up. (A handler, not signal.Ignore: an
	// ignored signal would stay ignored in every node and worker started.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stdout, stderr)
	case "check", "report":
		return cmdCheck(args[0], args[1:], stdout, stderr)
	case "list":
		return cmdList(stdout)
	case "claims":
		return cmdClaims(args[1:], stdout, stderr)
	case "suite":
		return cmdSuite(args[1:], stdout, stderr)
	case "cards":
		return cmdCards(args[1:], stdout, stderr)
	case "clean":
		return cmdClean(stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "simulate: unknown command %q\n%s", args[0], usage)
	return 2
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opt runner.Options
	fs.StringVar(&opt.Backend, "backend", "auto", "node backend: docker, process or auto (docker when an engine answers)")
	fs.StringVar(&opt.Lock, "lock", "", "run the scenario with this lock instead of its own (see `simulate list`)")
	fs.StringVar(&opt.Variant, "variant", "", "run this variant of the scenario")
	workerCmd := fs.String("worker", "", "start this command as every client's worker instead of the built-in one: it speaks docs/PROTOCOL.md and declares its lock (split into words like a shell would; no shell runs it)")
	fs.IntVar(&opt.Cycles, "cycles", 0, "number of fault cycles (default: the scenario's)")
	fs.Int64Var(&opt.Seed, "seed", 0, "seed for a random nemesis (default: the scenario's, else the time)")
	fs.StringVar(&opt.ReportsDir, "reports", "reports", "where report folders go")
	quiet := fs.Bool("q", false, "print only the run line and the summary")
	// Flags may come before or after the scenario name.
	pos, ok := parseInterleaved(fs, args)
	if !ok {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "simulate run: want exactly one scenario name or file, got %d (%s)\nscenarios: %s\n", len(pos), strings.Join(pos, " "), strings.Join(scenarios.Names(), ", "))
		return 2
	}
	if *workerCmd != "" && !describeWorker(&opt, *workerCmd, *quiet, stderr) {
		return 2
	}
	switch opt.Backend {
	case "auto", "docker", "process":
	default:
		fmt.Fprintf(stderr, "simulate run: -backend %q is not allowed (allowed: docker, process, auto)\n", opt.Backend)
		return 2
	}
	cyclesSet := false
	fs.Visit(func(f *flag.Flag) { cyclesSet = cyclesSet || f.Name == "cycles" })
	if cyclesSet && (opt.Cycles < 1 || opt.Cycles > scenarios.MaxCycles) {
		fmt.Fprintf(stderr, "simulate run: -cycles %d: want 1 to %d\n", opt.Cycles, scenarios.MaxCycles)
		return 2
	}
	sc, err := runner.Prepare(pos[0], opt)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if opt.Lock != "" && opt.Variant == "" {
		if sc.Variant != "" {
			fmt.Fprintf(stdout, "-lock %s selects variant %q of %s: its schedule and expectation apply, not the base's\n", opt.Lock, sc.Variant, sc.Name)
		} else {
			fmt.Fprintf(stdout, "-lock %s: no variant of %s uses it: the base schedule and expectation apply, with lock %s\n", opt.Lock, sc.Name, opt.Lock)
		}
	}
	opt.RunID = runner.NewRunID()
	fmt.Fprintf(stdout, "run %s  report folder %s\n", opt.RunID, runner.ReportDir(opt, sc, opt.RunID))
	if !*quiet {
		opt.Log = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	out, err := runner.Run(ctx, sc, opt)
	if out != nil {
		fmt.Fprintln(stdout, out.Summary)
	}
	if err != nil {
		fmt.Fprintln(stderr, "simulate run:", err)
	}
	return runner.Code(out, err)
}

func cmdCheck(which string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(which, flag.ContinueOnError)
	fs.SetOutput(stderr)
	linTimeout := fs.Duration("lin-timeout", checker.DefaultLinearizabilityTimeout, "bound on the whole linearizability check; when it runs out the verdict is unknown (1s to 1h)")
	pos, ok := parseInterleaved(fs, args)
	if !ok {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "simulate %s: want one report folder (reports/<scenario>/<run-id>)\n", which)
		return 2
	}
	if *linTimeout < time.Second || *linTimeout > time.Hour {
		fmt.Fprintf(stderr, "simulate %s: -lin-timeout %v (allowed: 1s to 1h)\n", which, *linTimeout)
		return 2
	}
	dir := pos[0]
	if os.Getenv("GOMEMLIMIT") == "" {
		// A long history is held in memory while it is checked: ask the
		// garbage collector to work harder rather than let the heap pass
		// 768 MiB (a soft limit: a bigger history still gets checked).
		debug.SetMemoryLimit(768 << 20)
	}
	events, err := history.Read(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	meta, sc, err := readMeta(dir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	opts := checker.Options{LinearizabilityTimeout: *linTimeout}
	if sc != nil {
		opts.StuckAfter = sc.StuckAfter.D()
	}
	res := checker.Check(events, opts)
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
	if which == "report" {
		if err := reports.Write(dir, meta, events, res); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
	}
	fmt.Fprintln(stdout, reports.Summary(dir, meta, res))
	if res.Verdict == checker.ClassUnknown {
		// A history that cannot be judged is never a pass.
		fmt.Fprintf(stderr, "simulate %s: the history cannot be judged: %s\n", which, res.Reason)
		return 2
	}
	return runner.Code(&runner.Outcome{Meta: meta}, nil)
}

func cmdList(stdout io.Writer) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tCLAIM\tLOCK\tEXPECT")
	for _, n := range scenarios.Names() {
		sc, err := scenarios.Load(n)
		if err != nil {
			fmt.Fprintf(tw, "%s\t(invalid: %v)\n", n, err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n, sc.Claim, sc.Lock.Name, strings.Join(sc.Expect, ","))
	}
	fmt.Fprintln(tw, "\nLOCK\tNEEDS\tPROMISES")
	for _, n := range lockimpl.Names() {
		i, _ := lockimpl.Lookup(n)
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n, i.Needs, i.Promises)
	}
	fmt.Fprintln(tw, "\nFAULT\tTARGET\tDESCRIPTION")
	for _, f := range faults.All() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, f.Targets, f.Description)
	}
	tw.Flush()
	return 0
}

func cmdClean(stdout, stderr io.Writer) int {
	ctx := context.Background()
	var errs []error
	if cluster.DockerAvailable(ctx) {
		n, err := cluster.CleanDocker(ctx)
		errs = append(errs, err)
		fmt.Fprintf(stdout, "removed %d docker object(s) labelled %s\n", n, cluster.LabelApp)
	}
	n, err := cluster.CleanTemp()
	errs = append(errs, err)
	fmt.Fprintf(stdout, "removed %d temp dir(s)\n", n)
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	return 0
}

// notFinished starts the error of a run whose harness still runs.
const notFinished = "the run has not finished"

// readMeta takes the run's metadata from report.json, and the scenario as
// run from scenario.yaml (both written by the run). When the harness died
// before writing report.json, the metadata comes from run.json and
// scenario.yaml, written at the start of the run, or, for a folder older
// than those, from the scenario named by the folder
// (reports/<scenario>/<run-id>).
func readMeta(dir string) (reports.Meta, *scenarios.Scenario, error) {
	info, sc, runErr := runner.ReadRun(dir)
	if runErr != nil && !errors.Is(runErr, os.ErrNotExist) {
		return reports.Meta{}, nil, runErr
	}
	var doc struct {
		Meta reports.Meta `json:"meta"`
	}
	data, err := os.ReadFile(filepath.Join(dir, reports.FileJSON))
	if err == nil {
		if err := json.Unmarshal(data, &doc); err != nil {
			return doc.Meta, nil, fmt.Errorf("%s: %v", filepath.Join(dir, reports.FileJSON), err)
		}
		if sc == nil {
			sc, _ = scenarios.Load(doc.Meta.Scenario) // a folder older than scenario.yaml
		}
		return doc.Meta, sc, nil
	}
	killed := "the harness was killed before it finished (no report.json)"
	if sc != nil && info.Pid > 0 && info.Pid != os.Getpid() && syscall.Kill(info.Pid, 0) == nil {
		// Its harness (or a process that reused its pid) still runs.
		return reports.Meta{Scenario: sc.Name, Claim: sc.Claim, Description: sc.Description, Lock: sc.Lock.Name,
			Backend: info.Backend, RunID: info.RunID, Seed: info.Seed, Started: info.Started,
			Expect: sc.Expect, Allow: sc.Allow, Schedule: sc.Schedule(),
			Error: fmt.Sprintf(notFinished+": its harness (pid %d) may still be running; this covers the history so far", info.Pid)}, sc, nil
	}
	if sc != nil {
		return reports.Meta{Scenario: sc.Name, Claim: sc.Claim, Description: sc.Description, Lock: sc.Lock.Name,
			Backend: info.Backend, RunID: info.RunID, Seed: info.Seed, Started: info.Started,
			Expect: sc.Expect, Allow: sc.Allow, Schedule: sc.Schedule(), Killed: true, Error: killed}, sc, nil
	}
	name := filepath.Base(filepath.Dir(filepath.Clean(dir)))
	sc, lerr := scenarios.Load(name)
	if lerr != nil {
		return reports.Meta{}, nil, fmt.Errorf("%s has no report.json and no run.json, and its folder names no scenario: %v", dir, lerr)
	}
	return reports.Meta{Scenario: sc.Name, Claim: sc.Claim, Description: sc.Description, Lock: sc.Lock.Name,
		RunID: filepath.Base(dir), Expect: sc.Expect, Allow: sc.Allow, Schedule: sc.Schedule(),
		Killed: true, Error: killed + "; no run.json either: the scenario's base lock and expectation are assumed"}, sc, nil
}

func cmdClaims(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("claims", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opt runner.Options
	fs.StringVar(&opt.Backend, "backend", "auto", "node backend: docker, process or auto")
	fs.IntVar(&opt.Cycles, "cycles", 0, "override every scenario's number of cycles")
	fs.StringVar(&opt.ReportsDir, "reports", "reports", "where report folders go")
	only := fs.String("only", "", "comma-separated claim ids or scenario names (default: all)")
	md := fs.String("out", "claims.md", "the matrix in markdown; the PNG goes beside it")
	parallel := fs.Int("parallel", 1, "scenarios run at the same time")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "simulate claims: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cyclesSet := false
	fs.Visit(func(f *flag.Flag) { cyclesSet = cyclesSet || f.Name == "cycles" })
	if cyclesSet && (opt.Cycles < 1 || opt.Cycles > scenarios.MaxCycles) {
		fmt.Fprintf(stderr, "simulate claims: -cycles %d: want 1 to %d\n", opt.Cycles, scenarios.MaxCycles)
		return 2
	}
	var filter []string
	if *only != "" {
		filter = strings.Split(*only, ",")
	}
	entries, err := runner.Catalogue(filter)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if len(entries) == 0 {
		fmt.Fprintf(stderr, "simulate claims: nothing matches -only %q\n", *only)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if *parallel < 1 || *parallel > 8 {
		fmt.Fprintf(stderr, "simulate claims: -parallel %d: want 1 to 8\n", *parallel)
		return 2
	}
	rows := runner.RunCatalogue(ctx, entries, opt, *parallel, func(s string) { fmt.Fprintln(stdout, s) })
	mdDir, _ := filepath.Abs(filepath.Dir(*md))
	for i := range rows {
		if rows[i].Report != "" {
			if rel, err := filepath.Rel(mdDir, rows[i].Report); err == nil {
				rows[i].Report = rel
			}
		}
	}
	png := strings.TrimSuffix(*md, filepath.Ext(*md)) + ".png"
	if err := reports.WriteClaims(*md, png, rows); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	bad := 0
	for _, r := range rows {
		if !r.Matched {
			bad++
		}
	}
	fmt.Fprintf(stdout, "%d of %d rows matched their expected verdict; wrote %s and %s\n", len(rows)-bad, len(rows), *md, png)
	if ctx.Err() != nil {
		return 2
	}
	if bad > 0 {
		return 1
	}
	return 0
}

// parseInterleaved parses flags that may come before or after the
// positional arguments, which it returns; false when a flag is bad (the
// flag set has printed why).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, bool) {
	var pos []string
	rest := args
	for len(rest) > 0 {
		if err := fs.Parse(rest); err != nil {
			return nil, false
		}
		rest = fs.Args()
		if len(rest) > 0 {
			pos = append(pos, rest[0])
			rest = rest[1:]
		}
	}
	return pos, true
}
