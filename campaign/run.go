package campaign

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Executor makes one run real (the command line implements it with
// runner: a property as `simulate suite` runs it, a scenario as `simulate
// run`, a seed as `simulate hunt`). It writes the run's reports under
// spec.Dir and returns what happened: Outcome, Observed, Finding, Report
// (a path under spec.Dir), Subject.Lock and Subject.LibraryVersion as
// the worker declared them, and Wall if it measured it. It never panics
// on a failed run: a failure is a harness-error result. Run fills in the
// identifying fields itself.
type Executor interface {
	Run(ctx context.Context, spec RunSpec) Result
}

// ExecutorFunc adapts a function to an Executor.
type ExecutorFunc func(ctx context.Context, spec RunSpec) Result

// Run calls f.
func (f ExecutorFunc) Run(ctx context.Context, spec RunSpec) Result { return f(ctx, spec) }

// openWriter opens the results file (a test opens /dev/full instead).
var openWriter = OpenWriter

// MaxParallel bounds the runs in flight at once.
const MaxParallel = 16

// Summary is what Run did.
type Summary struct {
	Shard Shard
	// Assigned runs of this shard; Skipped were already in the results
	// file (a shard run again continues where it stopped); Done finished
	// now; Dropped were cut short by cancellation and not recorded (they
	// run again next time).
	Assigned, Skipped, Done, Dropped int
	Interrupted                      bool
	Dir                              string
}

// Run runs this shard's runs of a campaign, parallel at a time, and
// appends each result to dir/results.jsonl as it finishes; dir/shard.json
// records the shard, its definition and how far it got. Cancelling ctx
// (Ctrl-C) starts nothing new and keeps every result that finished; a run
// cut short by the cancellation (a harness error or an unknown history
// returned after it) is not recorded, so running the shard again into the
// same dir runs just what is missing. Errors are bad input (before
// anything starts), a dir that holds another campaign, and the first
// write error (after which nothing new starts).
func Run(ctx context.Context, def *Definition, shard Shard, exec Executor, dir string, parallel int) (Summary, error) {
	shard = shard.norm()
	sum := Summary{Shard: shard, Dir: dir}
	switch {
	case !shard.Valid():
		return sum, fmt.Errorf("-shard: %d/%d (allowed: i/N with 1 ≤ i ≤ N ≤ %d)", shard.I, shard.N, MaxShards)
	case parallel < 1 || parallel > MaxParallel:
		return sum, fmt.Errorf("-parallel: %d (allowed: 1 to %d)", parallel, MaxParallel)
	case exec == nil:
		return sum, errors.New("campaign: no executor")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return sum, err
	}
	m := newManifest(def, shard)
	done, err := resume(dir, m)
	if err != nil {
		return sum, err
	}
	resultsPath := filepath.Join(dir, FileResults)
	specs := shard.Select(def.Enumerate())
	sum.Assigned = len(specs)
	todo := slices.DeleteFunc(slices.Clone(specs), func(s RunSpec) bool { return done[s.Identity] })
	sum.Skipped = len(specs) - len(todo)
	m.Assigned, m.Done = sum.Assigned, sum.Skipped
	if err := m.write(dir); err != nil {
		return sum, err
	}
	w, err := openWriter(resultsPath)
	if err != nil {
		return sum, err
	}

	var mu sync.Mutex
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, spec := range todo {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil || w.Err() != nil {
			break
		}
		spec.Dir = filepath.Join(dir, filepath.FromSlash(RunDir(spec.Subject, spec.Item, spec.Repetition)))
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			r, cut := runOne(ctx, exec, spec, dir)
			mu.Lock()
			defer mu.Unlock()
			if cut {
				sum.Dropped++
				return
			}
			if w.Write(r) == nil {
				sum.Done++
			}
		}()
	}
	wg.Wait()
	werr := w.Close()
	sum.Interrupted = ctx.Err() != nil || werr != nil
	m.Done, m.Interrupted, m.Finished = sum.Skipped+sum.Done, sum.Interrupted, time.Now().UTC()
	return sum, errors.Join(werr, m.write(dir))
}

// resume takes up what an earlier Run of the same shard left in dir: its
// start time, and the identities of the runs whose results it recorded
// (refusing a dir that holds another shard or another definition).
func resume(dir string, m *Manifest) (done map[string]bool, err error) {
	if old, err := ReadManifest(filepath.Join(dir, FileManifest)); err == nil {
		if old.DefinitionHash != m.DefinitionHash || old.Shard != m.Shard {
			return nil, fmt.Errorf("%s holds shard %s of campaign %s (definition %s, %s), not shard %s of %s (definition %s, %s): use another results folder",
				dir, old.Shard, old.Campaign, ShortHash(old.DefinitionHash), old.Version, m.Shard, m.Campaign, ShortHash(m.DefinitionHash), m.Version)
		}
		m.Started = old.Started
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	resultsPath := filepath.Join(dir, FileResults)
	prior, err := ReadResults(resultsPath)
	if err != nil {
		return nil, err
	}
	done = map[string]bool{}
	for _, l := range prior {
		if l.DefinitionHash != m.DefinitionHash {
			return nil, fmt.Errorf("%s:%d: a result of definition %s, this campaign is %s: use another results folder", resultsPath, l.Line, ShortHash(l.DefinitionHash), ShortHash(m.DefinitionHash))
		}
		done[l.Identity] = true
	}
	return done, nil
}

// runOne runs a spec and completes its result; cut reports a run that the
// cancellation of ctx cut short (not recorded).
func runOne(ctx context.Context, exec Executor, spec RunSpec, dir string) (r Result, cut bool) {
	started := time.Now()
	if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
		r = Result{Outcome: HarnessError, Finding: err.Error()}
	} else {
		r = safeRun(ctx, exec, spec)
	}
	if r.Wall <= 0 {
		r.Wall = time.Since(started)
	}
	if !slices.Contains(outcomesFor(spec.Item.Kind), r.Outcome) {
		r.Finding = fmt.Sprintf("the executor returned outcome %q for a %s (allowed: %s)", r.Outcome, spec.Item.Kind, outcomeNames(outcomesFor(spec.Item.Kind)))
		r.Outcome = HarnessError
	}
	if ctx.Err() != nil && (r.Outcome == HarnessError || r.Outcome == Unknown) {
		return r, true
	}
	r.Campaign, r.DefinitionHash, r.Version = spec.Campaign, spec.DefinitionHash, spec.Version
	r.Shard, r.Identity, r.Repetition = spec.Shard.String(), spec.Identity, spec.Repetition
	r.Item = spec.Item.RunItem()
	r.Subject.Worker = spec.Subject.Worker
	if r.Subject.Lock == "" {
		r.Subject.Lock = spec.Subject.Lock
	}
	r.Subject.LibraryVersion = clip(r.Subject.LibraryVersion, MaxVersionLen)
	r.Finding = clip(strings.Join(strings.Fields(r.Finding), " "), MaxFindingLen)
	if len(r.Observed) > MaxObserved {
		r.Observed = r.Observed[:MaxObserved]
	}
	if r.Report != "" {
		r.Report = relativeTo(dir, r.Report)
	}
	r.Finished = time.Now().UTC()
	return r, false
}

// safeRun calls the executor; a panic is a harness error.
func safeRun(ctx context.Context, exec Executor, spec RunSpec) (r Result) {
	defer func() {
		if p := recover(); p != nil {
			r = Result{Outcome: HarnessError, Finding: fmt.Sprintf("the executor panicked: %v", p)}
		}
	}()
	return exec.Run(ctx, spec)
}

// clip cuts s to at most n bytes, at a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// relativeTo makes path relative to dir (forward slashes) when it lies
// inside dir, and leaves it alone otherwise.
func relativeTo(dir, path string) string {
	ad, err1 := filepath.Abs(dir)
	ap, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return path
	}
	rel, err := filepath.Rel(ad, ap)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return filepath.ToSlash(rel)
}
