package hunt

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/pages"
)

// minimalName is the scenario name of a finding's minimal scenario.
func minimalName(f *Finding) string {
	return fmt.Sprintf("hunt-%s-%d-%d", slug(f.Fingerprint.ID()), f.Original.Seed, f.Original.Index)
}

// slug makes an identity usable in a file name.
func slug(s string) string { return strings.NewReplacer("/", "-", " ", "-").Replace(s) }

func joinOr(xs []string, none string) string {
	if len(xs) == 0 {
		return none
	}
	return strings.Join(xs, "; ")
}

// writeMinimal writes a finding's minimal scenario as an ordinary scenario
// file: `simulate run` runs it, `simulate suite -extra` keeps it as a
// regression. Its expect is the violation found.
func writeMinimal(dir, lock string, f *Finding) (string, error) {
	sc := f.Minimal.Compile(minimalName(f), lock, []string{f.Fingerprint.Class})
	sc.Claim = "hunt finding " + f.Fingerprint.ID()
	sc.Description = fmt.Sprintf("Found by simulate hunt (seed %d, schedule %d) and shrunk from %d faults to %d: %s",
		f.Original.Seed, f.Original.Index, len(f.Original.Events), len(f.Minimal.Events), joinOr(f.Minimal.Faults(), "no fault"))
	// Whatever else the violation brings along is allowed; the one found
	// must show.
	sc.Allow = nil
	for _, c := range checker.Classes {
		if c != checker.ClassSafe && c != checker.ClassUnknown && c != f.Fingerprint.Class {
			sc.Allow = append(sc.Allow, c)
		}
	}
	b, err := sc.Marshal()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "minimal.yaml")
	return path, os.WriteFile(path, b, 0o644)
}

// WriteCard writes the hunt's card (card.md) and its record (hunt.json).
func WriteCard(res *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Hunt: %s\n\n", res.Lock)
	state := "finished"
	if res.Interrupted {
		state = "INTERRUPTED (every finding so far is kept)"
	}
	fmt.Fprintf(&b, "- %s after %v\n- seed %d (the same seed draws the same schedules: `simulate hunt -seed %d`)\n", state, res.Took.Round(1e9), res.Seed, res.Seed)
	fmt.Fprintf(&b, "- schedules tried: %d (%d inconclusive: the run proved nothing or failed)\n", len(res.Tried), res.Inconclusive)
	known := "none"
	if len(res.Known) > 0 {
		known = strings.Join(res.Known, ", ")
	}
	fmt.Fprintf(&b, "- known limits (their faults were never drawn): %s\n", known)
	cov := Covered(res.Tried)
	var keys []string
	for k := range cov {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, cov[k]))
	}
	fmt.Fprintf(&b, "- faults covered: %s\n", joinOr(parts, "none"))
	fmt.Fprintf(&b, "- search: %s, %d schedule(s) at once\n", res.Search, res.Parallel)
	if res.UntilFound > 0 {
		fmt.Fprintf(&b, "- first violation: schedule %d, after %v\n", res.UntilFound, res.FoundAfter.Round(time.Second))
	}
	fmt.Fprintf(&b, "- coverage over time (distinct situations the runs reached; docs/HUNT.md): %s\n", coverageLine(res.Coverage))
	fmt.Fprintf(&b, "- nearest a violation (the margin between two holders' beliefs, in TTLs; docs/HUNT.md): %s\n", nearestLine(res.Coverage))
	fmt.Fprintf(&b, "- validity dated after the request (at least half the late extends of a run reported a validity ending %.2f TTL or more past their invoke plus the TTL; docs/HUNT.md): %s\n", overclaimEnough, overclaimLine(res.Coverage))
	fmt.Fprintf(&b, "- violations found: %d\n\n", len(res.Findings))
	for _, f := range res.Findings {
		fmt.Fprintf(&b, "## %s\n\n", f.Fingerprint.ID())
		fmt.Fprintf(&b, "%s\n\n", f.Fingerprint.Detail)
		fmt.Fprintf(&b, "- found by schedule %d of seed %d: %s\n", f.Original.Index, f.Original.Seed, joinOr(f.Original.Faults(), "no fault"))
		fmt.Fprintf(&b, "- its run: `%s`\n", f.OriginalDir)
		switch {
		case f.Flaky:
			fmt.Fprintf(&b, "- FLAKY: it did not show again in any try while shrinking; not shrunk, never \"fixed\"\n")
		case f.ShrinkRuns > 0:
			fmt.Fprintf(&b, "- shrunk in %v (%d runs) from %d faults to %d: %s\n", f.ShrinkTime.Round(1e9), f.ShrinkRuns,
				len(f.Original.Events), len(f.Minimal.Events), joinOr(f.Minimal.Faults(), "no fault"))
		}
		fmt.Fprintf(&b, "- minimal scenario: `%s` (a failing run of it: `%s`)\n", f.MinimalYAML, f.MinimalDir)
		fmt.Fprintf(&b, "- reproduction rate: %d of %d runs (%d cycles each)\n", f.Rate[0], f.Rate[1], f.Minimal.Cycles)
		if len(f.Unstable) > 0 {
			fmt.Fprintf(&b, "- measured before with fewer cycles: %s\n", strings.Join(f.Unstable, "; "))
		}
		fmt.Fprintf(&b, "- keep it as a regression: `simulate suite -extra %s`\n\n", filepath.Dir(f.MinimalYAML))
	}
	if err := os.WriteFile(filepath.Join(res.Dir, pages.FileHuntCard), []byte(b.String()), 0o644); err != nil {
		return err
	}
	j, _ := json.MarshalIndent(res, "", "  ")
	return os.WriteFile(filepath.Join(res.Dir, pages.FileHuntJSON), j, 0o644)
}

// coverageLine samples the coverage record: after 1, 2, 5, 10, 20, 50...
// schedules, and the last.
func coverageLine(pts []CoveragePoint) string {
	var parts []string
	next := 1
	for i, p := range pts {
		if i+1 == next || i == len(pts)-1 {
			parts = append(parts, fmt.Sprintf("%d keys after %d schedules (%.0f s)", p.Keys, p.Schedules, p.Seconds))
			for next <= i+1 {
				next = nextStep(next)
			}
		}
	}
	return joinOr(parts, "none")
}

// nearestLine says how near the runs came to a violation: the smallest
// margin (NearMiss) and its schedule, and how many runs came within
// nearEnough or below 0.
func nearestLine(pts []CoveragePoint) string {
	best, within, below := -1, 0, 0
	for i, p := range pts {
		if p.Near == nil {
			continue
		}
		if best < 0 || *p.Near < *pts[best].Near {
			best = i
		}
		if *p.Near < nearEnough {
			within++
		}
		if *p.Near < 0 {
			below++
		}
	}
	if best < 0 {
		return "no run handed a key from one holder to another without a release"
	}
	return fmt.Sprintf("%.4f in schedule %d; %d run(s) within %.2f, %d below 0", *pts[best].Near, pts[best].Index, within, nearEnough, below)
}

// overclaimLine says which operations overclaimed their validity
// (Overclaims), in how many runs, and the first schedule that showed it.
func overclaimLine(pts []CoveragePoint) string {
	runs, first := map[string]int{}, map[string]int{}
	var ops []string
	for _, p := range pts {
		for _, op := range p.Over {
			if runs[op] == 0 {
				ops = append(ops, op)
				first[op] = p.Index
			}
			runs[op]++
		}
	}
	if len(ops) == 0 {
		return "never"
	}
	sort.Strings(ops)
	var parts []string
	for _, op := range ops {
		parts = append(parts, fmt.Sprintf("%s in %d run(s), first schedule %d", op, runs[op], first[op]))
	}
	return strings.Join(parts, "; ")
}

// nextStep: 1, 2, 5, 10, 20, 50, ...
func nextStep(n int) int {
	switch m := n; {
	case fmt.Sprint(m)[0] == '2':
		return n / 2 * 5
	}
	return n * 2
}
