// Package report writes what one run found: a report.json for tools, a
// report.md and a self-contained report.html for people, porcupine's
// linearizability.html, and timeline.png when a drawer is linked (package
// plots). It reads plain data (the run's Meta, its events, the checker's
// result) and imports nothing above the checker; the pages over many runs
// (package pages) build on its document and wording.
package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
)

// Label is the lock's label, else its name.
func (m Meta) Label() string {
	if m.LockLabel != "" {
		return m.LockLabel
	}
	return m.Lock
}

// Meta describes a run: what was tested, what was expected, how it went.
type Meta struct {
	Scenario    string `json:"scenario"`
	Claim       string `json:"claim,omitempty"`
	Description string `json:"description,omitempty"`
	Lock        string `json:"lock"`
	// LockLabel is the lock with its options ("redisson+wait-replicas=1");
	// empty when it ran with none.
	LockLabel string `json:"lock_label,omitempty"`
	Backend   string `json:"backend"`
	RunID     string `json:"run_id"`
	Seed      int64  `json:"seed"`
	// Expect are the expected classes, Allow the tolerated extra ones.
	Expect []string `json:"expect"`
	Allow  []string `json:"allow,omitempty"`
	// Matched: did the observed verdict match the expectation; Why says how.
	Matched  bool          `json:"matched"`
	Why      string        `json:"why,omitempty"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	// Schedule is the human-readable fault schedule, one line per step.
	Schedule []string `json:"schedule,omitempty"`
	// Interrupted: the run was cut short (Ctrl-C); the report covers a prefix.
	Interrupted bool `json:"interrupted,omitempty"`
	// Error is a harness failure, if any.
	Error string `json:"error,omitempty"`
	// Killed: the harness died before writing report.json (SIGKILL, a
	// crash); the report was rebuilt from the folder by check/report.
	Killed bool `json:"killed,omitempty"`
}

// Files a report directory holds.
const (
	FileJSON      = "report.json"
	FileMarkdown  = "report.md"
	FileHTML      = "report.html"
	FileTimeline  = "timeline.png"
	FileLinearize = "linearizability.html"
	FileHistory   = "history.jsonl"
)

// Write writes into dir: report.json (Meta + checker.Result + files list),
// report.md, report.html (the same content as a self-contained page with
// the timeline embedded), timeline.png (when a drawer is linked, see
// SetTimeline) and linearizability.html.
// history.jsonl is already in dir (written by the harness); Write does not
// touch it. res may be nil when the harness failed before checking. Write
// writes every file it can and returns the errors of those it could not.
func Write(dir string, meta Meta, events []history.Event, res *checker.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Work on time-ordered events; the caller's slice is left as it was
	// (copied only when it is not in order already: history.Read orders it).
	evs := events
	if !sort.SliceIsSorted(evs, func(i, j int) bool { return evs[i].Time < evs[j].Time }) {
		evs = append([]history.Event(nil), events...)
		history.SortByTime(evs)
	}

	var errs []error
	var files []string
	try := func(name string, write func(path string) error) {
		if err := write(filepath.Join(dir, name)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			return
		}
		files = append(files, name)
	}
	if timeline != nil {
		try(FileTimeline, func(p string) error { return timeline(p, meta, evs, res) })
	}
	try(FileLinearize, func(p string) error { return writeLinearizability(p, evs, res) })

	have := map[string]bool{}
	for _, f := range files {
		have[f] = true
	}
	if _, err := os.Stat(filepath.Join(dir, FileHistory)); err == nil {
		have[FileHistory] = true
		files = append(files, FileHistory)
	}
	have[FileJSON], have[FileMarkdown], have[FileHTML] = true, true, true
	doc := runDocument(meta, evs, res, have)

	try(FileMarkdown, func(p string) error { return os.WriteFile(p, []byte(doc.Markdown()), 0o644) })
	title := fmt.Sprintf("lockfault: %s × %s", meta.Scenario, meta.Lock)
	try(FileHTML, func(p string) error { return os.WriteFile(p, []byte(doc.HTML(title, dir)), 0o644) })
	files = append(files, FileJSON)
	sort.Strings(files)
	if err := writeJSON(filepath.Join(dir, FileJSON), meta, res, files); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", FileJSON, err))
	}
	return errors.Join(errs...)
}

// Summary returns the short console summary of a run.
func Summary(dir string, meta Meta, res *checker.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "scenario %s  lock %s  backend %s", meta.Scenario, meta.Lock, meta.Backend)
	if meta.RunID != "" {
		fmt.Fprintf(&b, "  run %s", meta.RunID)
	}
	b.WriteString("\n")
	switch {
	case meta.Killed:
		b.WriteString("KILLED: the harness died before it finished; the results cover only the history it recorded\n")
	case meta.Interrupted:
		b.WriteString("INTERRUPTED: the results cover only the part of the run before Ctrl-C\n")
	}
	if meta.Error != "" && !meta.Killed {
		fmt.Fprintf(&b, "HARNESS ERROR: %s\n", meta.Error)
	}
	var observed []string
	if res != nil {
		observed = res.Observed
	}
	fmt.Fprintf(&b, "verdict:  %s (observed: %s)\n", VerdictOf(res), ClassList(observed))
	if res != nil && res.Reason != "" {
		fmt.Fprintf(&b, "unknown:  %s\n", res.Reason)
	}
	if res != nil {
		for _, f := range res.Findings {
			if f.Class == checker.ClassDied {
				fmt.Fprintf(&b, "died:     %s\n", f.Detail)
			}
		}
		if ev := res.Evidence; ev != nil {
			fmt.Fprintf(&b, "evidence: %s\n", ev.Text())
		}
	}
	exp := ClassList(meta.Expect)
	if len(meta.Allow) > 0 {
		exp += " (tolerated: " + strings.Join(meta.Allow, ", ") + ")"
	}
	fmt.Fprintf(&b, "expected: %s\n", exp)
	if meta.Matched {
		fmt.Fprintf(&b, "match:    yes, %s\n", meta.Why)
	} else {
		fmt.Fprintf(&b, "match:    NO, %s\n", meta.Why)
	}
	if res != nil {
		n := CountClasses(res.Findings)
		s := res.Stats
		fmt.Fprintf(&b, "counts:   %d grants, %d critical sections, %d overlaps, %d corruption, %d fenced, %d stuck",
			s.Grants, s.CriticalSecs, n[checker.ClassOverlap], n[checker.ClassCorruption], n[checker.ClassFenced], n[checker.ClassStuck])
		if k := n[checker.ClassFenceInversion]; k > 0 {
			fmt.Fprintf(&b, ", %d fence-inversion", k)
		}
		if k := n[checker.ClassStaleExtend]; k > 0 {
			fmt.Fprintf(&b, ", %d stale-extend", k)
		}
		if k := n[checker.ClassDied]; k > 0 {
			fmt.Fprintf(&b, ", %d died", k)
		}
		if len(res.Keys) > 1 {
			fmt.Fprintf(&b, " over %d keys", len(res.Keys))
		}
		b.WriteString("\n")
		if s.Cycles > 0 {
			fmt.Fprintf(&b, "cycles:   %d/%d with an overlap (fenced or not)\n", s.CyclesOverlap, s.Cycles)
		}
	}
	fmt.Fprintf(&b, "report:   %s", filepath.Join(dir, FileMarkdown))
	return b.String()
}

// CountClasses counts findings per class.
func CountClasses(fs []checker.Finding) map[string]int {
	n := map[string]int{}
	for _, f := range fs {
		n[f.Class]++
	}
	return n
}
