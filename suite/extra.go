package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/scenarios"
)

// Extra scenarios are a user's own regression set: scenario files (a
// hunt's minimal.yaml, say) that run beside the properties, each a row of
// the card named "extra/<scenario name>", held when the run matched its own
// expectation with evidence.
const (
	// ExtraPrefix starts the name of an extra scenario's row.
	ExtraPrefix = "extra/"
	// MaxExtra bounds the extra scenarios of one card.
	MaxExtra = 200
)

// runRecord: a scenario file a run wrote into its report folder (beside
// its run.json), as a hunt's folder holds one per run: not a saved scenario.
func runRecord(f string) bool {
	_, err := os.Stat(filepath.Join(filepath.Dir(f), "run.json"))
	return err == nil
}

// Extra is one saved scenario.
type Extra struct {
	Name     string // the row's name: extra/<scenario name>
	Path     string
	Scenario *scenarios.Scenario
}

// LoadExtra reads the scenario files named (a file, or every *.yaml of a
// folder and of its subfolders, as a hunt leaves them), checks each before
// anything starts and refuses two with one name.
func LoadExtra(paths []string) ([]Extra, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("-extra: %v", err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(f string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(f, ".yaml") && !strings.HasSuffix(f, "original.yaml") && !runRecord(f) {
				files = append(files, f)
			}
			if len(files) > MaxExtra {
				return fmt.Errorf("more than %d scenario files", MaxExtra)
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("-extra %s: %v", p, err)
		}
	}
	if len(files) > MaxExtra {
		return nil, fmt.Errorf("-extra: %d scenario files (allowed: at most %d)", len(files), MaxExtra)
	}
	var out []Extra
	for _, f := range files {
		sc, err := scenarios.Load(f)
		if err != nil {
			return nil, err
		}
		name := ExtraPrefix + sc.Name
		if i := slices.IndexFunc(out, func(e Extra) bool { return e.Name == name }); i >= 0 {
			return nil, fmt.Errorf("%s: name: %q is also the name of %s (allowed: one scenario per name)", f, sc.Name, out[i].Path)
		}
		out = append(out, Extra{Name: name, Path: f, Scenario: sc})
	}
	slices.SortFunc(out, func(a, b Extra) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ExtraFor is the saved scenarios a card of subj runs among extra: those
// whose scenario names subj's lock (lock.name). A library's regressions
// (examples/<worker>/regressions/) are given to every card run (simulate
// cards -extra) and each runs on its own lock's card only.
func ExtraFor(extra []Extra, subj runner.Subject) []Extra {
	var out []Extra
	for _, e := range extra {
		if e.Scenario.Lock.Name == subj.Name() {
			out = append(out, e)
		}
	}
	return out
}

// IsExtra reports whether a row (or a baseline line) names an extra
// scenario.
func IsExtra(name string) bool { return strings.HasPrefix(name, ExtraPrefix) }

// RunExtra runs one saved scenario against the subject as a card row. Its
// promise is the suite's: nothing goes wrong under its faults. So whatever
// the file expects (a hunt's minimal.yaml expects the violation it found),
// the row holds only when the run is safe, and is violated while the
// violation still shows: a regression test, which passes once it is fixed.
func RunExtra(ctx context.Context, e Extra, subj runner.Subject, opt Options) card.Row {
	row := card.Row{Property: e.Name, Explanation: oneLine(e.Scenario.Description), Scenario: e.Path}
	if row.Explanation == "" {
		row.Explanation = "a saved scenario: " + e.Path
	}
	sc := *e.Scenario
	sc.Expect, sc.Allow = []string{checker.ClassSafe}, nil
	return runRow(ctx, row, &sc, subj, opt, nil)
}
