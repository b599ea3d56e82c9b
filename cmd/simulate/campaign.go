package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockfault/lockfault/campaign"
	"github.com/lockfault/lockfault/campaign/builtin"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/hunt"
	"github.com/lockfault/lockfault/pages"
	"github.com/lockfault/lockfault/runner"
)

// version is the lockfault build a campaign's shards must share: the
// binary's own VCS revision when the build recorded one, else its hash.
func version() string { return runner.Version() }

// cmdCampaign runs a shard of a campaign (every run when unsharded), or
// prints its Kubernetes Indexed Job (-emit k8s).
func cmdCampaign(args []string, stdout, stderr io.Writer) int {
	f := newFlags("campaign", "", stdout, stderr)
	var v campaign.Values
	def := f.String("def", "", "a campaign definition file (YAML; docs/CAMPAIGNS.md); or the flags below")
	f.StringVar(&v.Name, "name", "", "the campaign's name")
	locks := f.String("locks", "", "comma-separated locks")
	f.StringVar(&v.Worker, "worker", "", "an external worker command (docs/PROTOCOL.md)")
	f.StringVar(&v.WorkerLock, "worker-lock", "", "the lock name the worker should declare")
	workerKnown := f.String("worker-known", "", "comma-separated known limits of the worker's lock: its hunt items never draw their faults (allowed: "+strings.Join(hunt.LimitNames(), ", ")+"); a built-in lock's come from its promise table")
	props := f.String("properties", "", "comma-separated properties or prefixes")
	scens := f.String("scenarios", "", "comma-separated scenario names or files")
	hunts := f.String("hunt", "", "comma-separated hunt seeds or FROM:COUNT ranges")
	f.StringVar(&v.HuntSearch, "hunt-search", "", fmt.Sprintf("the -hunt seeds' search (allowed: %s; default random)", strings.Join(hunt.Searches, ", ")))
	f.IntVar(&v.Repetitions, "repeat", 1, "runs of every cell")
	shard := f.String("shard", "1/1", "run the i-th of N slices (1-based), assigned by a stable hash of each run's identity")
	results := f.String("results", "reports/campaign", "the shard's results folder (results.jsonl, shard.json, each run's report)")
	parallel := f.Int("parallel", 1, fmt.Sprintf("runs at the same time (1 to %d)", campaign.MaxParallel))
	backend := f.backend()
	cycles := f.Int("cycles", 0, "override every item's cycles (0: their own)")
	emit := f.String("emit", "", "print the campaign as a Kubernetes Indexed Job instead of running it (allowed: k8s); the flags after -- go to it (lockfault-ext emit-k8s -h)")
	pos, code, ok := f.parse(args)
	if !ok {
		return code
	}
	v.Locks, v.Properties, v.Scenarios, v.Hunt, v.WorkerKnown = list(*locks), list(*props), list(*scens), list(*hunts), list(*workerKnown)
	if *emit != "" {
		given := *def != "" || v.Name != "" || v.Worker != "" || v.WorkerLock != "" || v.HuntSearch != "" || f.set("repeat") ||
			len(v.Locks)+len(v.Properties)+len(v.Scenarios)+len(v.Hunt)+len(v.WorkerKnown) > 0
		return emitK8s(f, *emit, *def, v, given, pos, stdout, stderr)
	}
	if len(pos) > 0 {
		return f.fail("unexpected argument %q (flags only; with -emit k8s, its flags after --)", pos[0])
	}
	if os.Getenv("JOB_COMPLETION_INDEX") != "" && *backend != cluster.BackendProcess {
		// A pod of the Kubernetes Job has no Docker engine: every run
		// would fail to start its nodes.
		return f.fail("-backend %s: in a Kubernetes pod (JOB_COMPLETION_INDEX is set) a campaign runs its nodes as processes (allowed: -backend process; the pod has no Docker engine, docs/CAMPAIGNS.md)", *backend)
	}
	d, err := readDefinition(*def, v)
	if err != nil {
		return f.fail("%v", err)
	}
	sh, err := campaign.ParseShard(*shard)
	if err != nil {
		return f.fail("%v", err)
	}
	if *parallel < 1 || *parallel > campaign.MaxParallel {
		return f.fail("-parallel %d: want 1 to %d", *parallel, campaign.MaxParallel)
	}
	ctx, stop := interruptible()
	defer stop()
	// What the runs need, checked before any starts.
	needs := builtin.NeedsOf(ctx, d)
	if *backend == cluster.BackendProcess {
		if err := cluster.CheckPrograms(needs.Programs...); err != nil {
			return f.fail("%v", err)
		}
	}
	if items := needs.ShimItems; len(items) > 0 {
		if _, err := cluster.ClockShimPath(); err != nil {
			return f.fail("%d items use clock-jump, clock-drift or power-loss, which need the clock shim, and it is missing (%v): %s (make shim builds it; LOCKFAULT_CLOCK_SHIM names it; or leave these items out)",
				len(items), err, strings.Join(items, ", "))
		}
	}
	exec := &builtin.Executor{Options: runner.Options{Backend: *backend}, Cycles: *cycles}
	exec.Hunt = builtin.Hunter(exec.Options, 20)
	sum, err := campaign.Run(ctx, d, sh, exec, *results, *parallel)
	fmt.Fprintf(stdout, "campaign %s shard %s: %d runs assigned, %d done now, %d done before, %d cut short: %s\n",
		d.Name, sh, sum.Assigned, sum.Done, sum.Skipped, sum.Dropped, *results)
	writeIndex(filepath.Dir(*results), stderr)
	switch {
	case err != nil:
		return f.fail("%v", err)
	case sum.Interrupted:
		return 1 // run the shard again: it continues where it stopped
	}
	return 0
}

// readDefinition reads -def, or builds the definition from the flags.
func readDefinition(path string, v campaign.Values) (*campaign.Definition, error) {
	var d *campaign.Definition
	var err error
	if path != "" {
		d, err = campaign.ReadFile(path, builtin.Registry())
	} else {
		d, err = campaign.FromValues(v, builtin.Registry())
	}
	if err != nil {
		return nil, err
	}
	d.Version = version()
	return d, nil
}

// emitK8s prints the Indexed Job through lockfault-ext (the k8s API types
// are kept out of lockfault's own module). A campaign given by flags is
// checked here and written as a definition file (in the working folder, so
// that scenario files named relative to it are found, and removed after)
// for the ConfigMap; with no campaign given, lockfault-ext names -def with
// every other missing option in one message.
func emitK8s(f *flags, what, def string, v campaign.Values, given bool, rest []string, stdout, stderr io.Writer) int {
	if what != "k8s" {
		return f.fail("-emit: %q (allowed: k8s)", what)
	}
	ext := runner.ExtWorker()
	if ext == "" {
		return f.fail("-emit k8s: needs bin/lockfault-ext (make adapters)")
	}
	if def == "" && given {
		d, err := readDefinition("", v)
		if err != nil {
			return f.fail("%v", err)
		}
		text, err := d.YAML()
		if err != nil {
			return f.fail("-emit k8s: %v", err)
		}
		tmp, err := os.CreateTemp(".", ".lockfault-campaign-*.yaml")
		if err != nil {
			return f.fail("-emit k8s: the definition file for the ConfigMap: %v", err)
		}
		defer os.Remove(tmp.Name())
		_, werr := tmp.Write(text)
		if cerr := tmp.Close(); werr != nil || cerr != nil {
			return f.fail("-emit k8s: %s: %v", tmp.Name(), errors.Join(werr, cerr))
		}
		def = tmp.Name()
	}
	args := append([]string{"emit-k8s", "-def", def}, rest...)
	cmd := exec.Command(ext, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(stderr, "simulate campaign: -emit k8s: the Job's options go after --: simulate campaign -emit k8s -def FILE (or -locks ...) -- -image IMAGE -shards N -results-claim CLAIM")
		return 2
	}
	return 0
}

// cmdMerge combines shard folders into one campaign result.
func cmdMerge(args []string, stdout, stderr io.Writer) int {
	f := newFlags("merge", "SHARD-DIR...", stdout, stderr)
	out := f.String("out", "reports/campaign-merged", "where campaign.json, campaign.md and junit.xml go")
	summary := f.String("summary", "", "also write campaign.md without links to the runs' reports to this file (make rates: docs/RATES.md)")
	pos, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return f.fail("want the shard folders to merge")
	}
	r, err := campaign.Merge(pos...)
	if err != nil {
		return f.fail("%v", err)
	}
	if err := r.Write(*out); err != nil {
		return f.fail("%v", err)
	}
	if *summary != "" {
		if err := os.WriteFile(*summary, []byte(r.Summary()), 0o644); err != nil {
			return f.fail("-summary: %v", err)
		}
	}
	writeIndex(filepath.Dir(*out), stderr)
	fmt.Fprint(stdout, r.Markdown())
	fmt.Fprintf(stdout, "\nmerged %d of %d runs into %s\n", r.Done, r.Planned, *out)
	switch {
	case !r.Complete():
		fmt.Fprintf(stderr, "simulate merge: incomplete: %s\n", r.CompletenessText())
		return 2
	case r.Count(campaign.Differs) > 0:
		return 1
	}
	return 0
}

// cmdServe serves a reports folder (its index.html, rewritten first) on
// loopback.
func cmdServe(args []string, stdout, stderr io.Writer) int {
	f := newFlags("serve", "[reports-dir]", stdout, stderr)
	addr := f.String("addr", "127.0.0.1:8080", "where to listen (loopback only)")
	pos, code, ok := f.parse(args)
	if !ok {
		return code
	}
	root := "reports"
	if len(pos) == 1 {
		root = pos[0]
	} else if len(pos) > 1 {
		return f.fail("want at most one reports folder")
	}
	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return f.fail("-addr %q: want a loopback host:port (allowed: 127.0.0.1:PORT, [::1]:PORT)", *addr)
	}
	if _, err := pages.WriteIndex(root); err != nil {
		return f.fail("%v", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return f.fail("%v", err)
	}
	fmt.Fprintf(stdout, "serving %s on http://%s/index.html (Ctrl-C stops)\n", root, ln.Addr())
	ctx, stop := interruptible()
	defer stop()
	srv := &http.Server{Handler: http.FileServer(http.Dir(root)), ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); srv.Shutdown(context.Background()) }()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		return f.fail("%v", err)
	}
	return 0
}

// writeIndex rewrites <reports>/index.html after a run, suite, cards,
// claims, hunt, campaign or merge; a failure is said, never fatal.
func writeIndex(root string, stderr io.Writer) {
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return
	}
	if _, err := pages.WriteIndex(root); err != nil {
		fmt.Fprintln(stderr, "index.html:", err)
	}
}
