// Package claims runs the claims catalogue: every built-in scenario that
// reproduces a claim of the source documents (or is a control), with all its
// variants, and writes the claim × lock matrix (claims.md, claims.png). It
// sits above runner, which runs each scenario.
package claims

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/pages"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/scenarios"
)

// Options of a catalogue run.
type Options struct {
	Run      runner.Options // backend, reports root, log of every scenario's run
	Cycles   int            // override every scenario's number of cycles (0: their own)
	Parallel int            // scenarios at the same time (1 to MaxParallel)
}

// MaxParallel bounds how many scenarios run at once.
const MaxParallel = 8

// Check validates the options before anything starts.
func (o Options) Check() error {
	switch {
	case o.Parallel < 1 || o.Parallel > MaxParallel:
		return fmt.Errorf("-parallel %d: want 1 to %d", o.Parallel, MaxParallel)
	case o.Cycles < 0 || o.Cycles > scenarios.MaxCycles:
		return fmt.Errorf("-cycles %d: want 1 to %d", o.Cycles, scenarios.MaxCycles)
	}
	return nil
}

// Write writes the claims matrix (md, and a PNG beside it) with report
// links relative to it, and returns how many rows matched.
func Write(mdPath string, rows []pages.ClaimRow) (matched int, err error) {
	rows = slices.Clone(rows)
	mdDir, _ := filepath.Abs(filepath.Dir(mdPath))
	for i := range rows {
		if rows[i].Matched {
			matched++
		}
		if rows[i].Report != "" {
			if rel, err := filepath.Rel(mdDir, rows[i].Report); err == nil {
				rows[i].Report = rel
			}
		}
	}
	png := strings.TrimSuffix(mdPath, filepath.Ext(mdPath)) + ".png"
	return matched, pages.WriteClaims(mdPath, png, rows)
}

// CatalogueEntry is one scenario variant of the catalogue.
type CatalogueEntry struct {
	Scenario, Variant string
}

// Catalogue lists every built-in scenario that reproduces a claim (or is a
// control), with all its variants, in claim order. only filters by claim id
// or scenario name (empty: all).
func Catalogue(only []string) ([]CatalogueEntry, error) {
	type item struct {
		claim string
		e     CatalogueEntry
	}
	var items []item
	for _, n := range scenarios.Names() {
		sc, err := scenarios.Load(n)
		if err != nil {
			return nil, err
		}
		if sc.Claim == "" {
			continue
		}
		if len(only) > 0 && !slices.ContainsFunc(only, func(o string) bool { return strings.EqualFold(o, sc.Claim) || strings.EqualFold(o, sc.Name) }) {
			continue
		}
		for _, v := range sc.VariantNames() {
			items = append(items, item{sc.Claim, CatalogueEntry{n, v}})
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return claimLess(items[i].claim, items[j].claim) })
	var out []CatalogueEntry
	for _, it := range items {
		out = append(out, it.e)
	}
	return out, nil
}

// claimLess orders C1 < C2 < C10, controls last.
func claimLess(a, b string) bool {
	na, ea := claimNum(a)
	nb, eb := claimNum(b)
	if ea != eb {
		return ea
	}
	if na != nb {
		return na < nb
	}
	return a < b
}

func claimNum(c string) (int, bool) {
	var n int
	if _, err := fmt.Sscanf(c, "C%d", &n); err != nil {
		return 1 << 30, false
	}
	return n, true
}

// RunCatalogue runs the entries, parallel at a time (scenarios are
// independent: their own nodes, ports, proxies and networks), and returns a
// claims row for each, in catalogue order. A harness failure in one entry is
// recorded in its row and the catalogue goes on. Report paths are absolute.
func Run(ctx context.Context, entries []CatalogueEntry, opt Options, progress func(string)) []pages.ClaimRow {
	parallel := max(opt.Parallel, 1)
	rows := make([]pages.ClaimRow, len(entries))
	ms := make([]*measure, len(entries))
	var mu sync.Mutex
	done := 0
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, e := range entries {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			start := time.Now()
			row, m := runEntry(ctx, e, opt)
			mu.Lock()
			defer mu.Unlock()
			rows[i], ms[i] = row, m
			done++
			if progress != nil {
				progress(fmt.Sprintf("[%d/%d] %-28s %-16s expected %-22s observed %-28s %s (%v)", done, len(entries), row.Scenario, row.Lock,
					strings.Join(row.Expect, ","), strings.Join(row.Observed, ","), okText(row.Matched), time.Since(start).Round(time.Second)))
			}
		}()
	}
	wg.Wait()
	measures := map[string]map[string]measure{} // scenario -> variant -> measure
	var out []pages.ClaimRow
	for i, e := range entries {
		if rows[i].Scenario == "" {
			continue // not run (interrupted)
		}
		if ms[i] != nil {
			if measures[e.Scenario] == nil {
				measures[e.Scenario] = map[string]measure{}
			}
			measures[e.Scenario][e.Variant] = *ms[i]
		}
		out = append(out, rows[i])
	}
	compareVariants(out, measures)
	return out
}

// runEntry runs one scenario variant and makes its row.
func runEntry(ctx context.Context, e CatalogueEntry, opt Options) (pages.ClaimRow, *measure) {
	label := e.Scenario
	if e.Variant != "" {
		label += "/" + e.Variant
	}
	row := pages.ClaimRow{Scenario: label}
	base, err := runner.Load(e.Scenario)
	if err != nil {
		row.Note = err.Error()
		return row, nil
	}
	plan, err := runner.Prepare(ctx, base, nil, runner.Overrides{Variant: e.Variant, Cycles: opt.Cycles})
	if err != nil {
		row.Note = err.Error()
		return row, nil
	}
	sc := plan.Scenario
	row.Claim, row.Lock, row.Expect = sc.Claim, sc.Lock.Name, sc.Expect
	out, err := runner.Run(ctx, plan, opt.Run)
	var m *measure
	if out != nil {
		res := out.Result
		row.Observed = res.Observed
		if len(row.Observed) == 0 {
			row.Observed = []string{checker.ClassSafe}
		}
		row.Matched = out.Meta.Matched
		row.Hits, row.Cycles = expectedHits(res, sc.Expect)
		row.Rate = rateText(res, sc.Expect)
		if abs, err := filepath.Abs(filepath.Join(out.Dir, "report.md")); err == nil {
			row.Report = abs
		}
		if sc.Compare != "" {
			mm := measureOf(res)
			m = &mm
		}
	}
	if err != nil {
		row.Matched = false
		row.Note = "harness: " + err.Error()
	}
	return row, m
}

func okText(ok bool) string {
	if ok {
		return "MATCH"
	}
	return "NO MATCH"
}

// expectedHits counts cycles that showed every expected class (for safe:
// cycles with no finding).
func expectedHits(res *checker.Result, expect []string) (int, int) {
	hits := 0
	for _, cs := range res.CycleObserved {
		have := map[string]bool{}
		for _, c := range cs {
			have[c] = true
		}
		ok := true
		for _, e := range expect {
			if e == checker.ClassSafe {
				ok = ok && len(cs) == 0
			} else {
				ok = ok && have[e]
			}
		}
		if ok {
			hits++
		}
	}
	return hits, len(res.CycleObserved)
}

// rateText names what was observed beyond the expectation (the report
// shows the expected classes' own rate from Hits/Cycles).
func rateText(res *checker.Result, expect []string) string {
	var parts []string
	for _, c := range res.Observed {
		if slices.Contains(expect, c) {
			continue
		}
		n, of := res.Rate(c)
		parts = append(parts, fmt.Sprintf("also %s in %d/%d cycles", c, n, of))
	}
	return strings.Join(parts, ", ")
}

// measure is what the catalogue compares across variants (C15).
type measure struct {
	successRate float64 // grants / acquire attempts
	meanAcquire time.Duration
}

func measureOf(res *checker.Result) measure {
	m := measure{meanAcquire: time.Duration(res.Stats.MeanAcquireNs)}
	if res.Stats.Acquires > 0 {
		m.successRate = float64(res.Stats.Grants) / float64(res.Stats.Acquires)
	}
	return m
}

// compareVariants checks scenarios with `compare`: the base variant must do
// worse than each other variant on success rate and mean time to acquire.
func compareVariants(rows []pages.ClaimRow, measures map[string]map[string]measure) {
	for scen, byVar := range measures {
		base, ok := byVar[""]
		if !ok {
			continue
		}
		for i := range rows {
			// Rows are labelled "scenario" or "scenario/variant"; another
			// scenario whose name merely starts with scen (gc-pause and
			// gc-pause-fenced) is not one of them.
			if rows[i].Scenario != scen && !strings.HasPrefix(rows[i].Scenario, scen+"/") {
				continue
			}
			v := strings.TrimPrefix(strings.TrimPrefix(rows[i].Scenario, scen), "/")
			m := byVar[v]
			rows[i].Rate = fmt.Sprintf("acquire success %.0f%%, mean time to acquire %v", 100*m.successRate, m.meanAcquire.Round(time.Millisecond))
			if v != "" {
				continue
			}
			var why []string
			for ov, om := range byVar {
				if ov == "" {
					continue
				}
				worse := base.successRate < om.successRate && base.meanAcquire > om.meanAcquire
				why = append(why, fmt.Sprintf("vs %s: success %.0f%% vs %.0f%%, time to acquire %v vs %v (%s)", ov,
					100*base.successRate, 100*om.successRate, base.meanAcquire.Round(time.Millisecond), om.meanAcquire.Round(time.Millisecond),
					map[bool]string{true: "worse, as claimed", false: "NOT worse"}[worse]))
				if !worse {
					rows[i].Matched = false
				}
			}
			sort.Strings(why)
			rows[i].Note = strings.Join(why, "; ")
		}
	}
}
