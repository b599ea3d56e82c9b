package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
)

// Table caps, so a long run still gives a readable report.
const (
	maxFindingRows = 50
	maxCycleRows   = 100
	maxWindowRows  = 100
)

// runDocument builds the content of report.md and report.html. have names
// the files present in the report directory, for the links.
func runDocument(meta Meta, events []history.Event, res *checker.Result, have map[string]bool) *Document {
	d := &Document{}
	sp := RunSpan(events, res)
	r := res
	if r == nil {
		r = &checker.Result{}
	}
	headSection(d, meta)
	verdictSection(d, meta, res, r)
	if have[FileTimeline] {
		d.H(2, "Timeline")
		d.P(Txt("One lane per client. Bars are holds of the lock (acquired → released, expired or crashed); " +
			"a thin pale bar after a hold means the client still touched the resource after its hold had ended. " +
			"Shaded vertical bands are fault windows. Red marks two clients holding the lock at once, orange an overlap " +
			"that fencing made harmless, a red ✕ a lost update. Dashed lines are cycle starts."))
		d.Img("timeline", FileTimeline)
	}
	findingsSection(d, sp, r)
	cyclesSection(d, sp, events, r)
	statsSection(d, events, r)
	faultsSection(d, sp, meta, r)
	effectsSection(d, sp, events)
	filesSection(d, have)
	runSection(d, meta)
	return d
}

// headSection: the title, what cut the run short, the claim.
func headSection(d *Document, meta Meta) {
	d.H(1, fmt.Sprintf("lockfault: %s × %s", meta.Scenario, meta.Label()))
	if meta.Interrupted {
		d.Callout(Bold("Interrupted."), Txt(" The run was cut short (Ctrl-C): everything below covers only the part of the run before it stopped."))
	}
	if meta.Error != "" {
		d.Callout(Bold("Harness error:"), Txt(" "+meta.Error), Txt(" — the test itself failed, so the verdict below may not say anything about the lock."))
	}
	if meta.Claim != "" {
		d.P(Bold("Claim:"), Txt(" "+meta.Claim))
	}
	if meta.Description != "" {
		d.P(Txt(meta.Description))
	}
}

// verdictSection: the verdict against the expectation, and the evidence
// that the faults reached the lock. res may be nil (r is then empty).
func verdictSection(d *Document, meta Meta, res, r *checker.Result) {
	d.H(2, "Verdict")
	d.P(Txt(verdictSentence(meta, r)))
	exp := ClassList(meta.Expect)
	if len(meta.Allow) > 0 {
		exp += " (tolerated: " + strings.Join(meta.Allow, ", ") + ")"
	}
	d.Tab(Table{Header: []string{"", ""}, Rows: [][]Cell{
		{Plain("observed verdict"), {Spans: []Inline{Bold(VerdictOf(res))}}},
		{Plain("all classes observed"), Plain(ClassList(r.Observed))},
		{Plain("expected"), Plain(exp)},
		{Plain("matched"), Toned(YesNo(meta.Matched)+" — "+meta.Why, meta.Matched)},
		{Plain("linearizability of the critical sections (porcupine)"), Plain(OrDash(r.Linearizable))},
	}})
	if ev := r.Evidence; ev != nil {
		d.P(Bold("Evidence:"), Txt(" "+ev.Text()+"."))
		if len(ev.Missing) > 0 {
			var items [][]Inline
			for _, m := range ev.Missing {
				items = append(items, Item(Txt(m)))
			}
			d.UL(items...)
		}
	}
}

// filesSection lists the files of the report folder that were written.
func filesSection(d *Document, have map[string]bool) {
	d.H(2, "Files")
	var items [][]Inline
	for _, f := range []struct{ name, what string }{
		{FileTimeline, "the timeline picture"},
		{FileLinearize, "porcupine's view of the critical sections (open in a browser; fault windows are annotated)"},
		{FileHistory, "every event of the run, one JSON object per line"},
		{FileJSON, "this report for tools"},
		{FileHTML, "this report as one self-contained page"},
		{FileMarkdown, "this report"},
	} {
		if have[f.name] {
			items = append(items, Item(Link(f.name, f.name), Txt(" — "+f.what)))
		}
	}
	d.UL(items...)
}

// runSection: the run's id, backend, seed and times.
func runSection(d *Document, meta Meta) {
	d.H(2, "Run")
	run := [][]Cell{
		{Plain("run id"), Plain(OrDash(meta.RunID))},
		{Plain("backend"), Plain(OrDash(meta.Backend))},
		{Plain("seed"), Plain(fmt.Sprint(meta.Seed))},
	}
	if !meta.Started.IsZero() {
		run = append(run, []Cell{Plain("started"), Plain(meta.Started.Format(time.RFC3339))})
	}
	run = append(run, []Cell{Plain("duration"), Plain(meta.Duration.Round(time.Millisecond).String())})
	d.Tab(Table{Header: []string{"", ""}, Rows: run})
}

// verdictSentence says in plain words what the run found.
func verdictSentence(meta Meta, r *checker.Result) string {
	var s string
	switch r.Verdict {
	case "":
		s = "There is no verdict: the run produced no result to check."
	case checker.ClassUnknown:
		s = "There is no verdict: the history cannot be judged (" + r.Reason + "). Unknown is not safe."
	case checker.ClassSafe:
		s = "Nothing went wrong: no two clients held the lock at once, no update was lost, and the lock never got stuck."
	default:
		n := CountClasses(r.Findings)
		var parts []string
		for _, c := range checker.Classes {
			if n[c] > 0 {
				parts = append(parts, Plural(n[c], c+" finding"))
			}
		}
		s = "The checker found " + strings.Join(parts, ", ") + "."
		if len(r.CycleObserved) > 0 {
			var rates []string
			for _, c := range r.Observed {
				hits, of := r.Rate(c)
				rates = append(rates, fmt.Sprintf("%s in %d of %d cycles", c, hits, of))
			}
			s += " Seen " + strings.Join(rates, ", ") + "."
		}
	}
	if meta.Matched {
		return s + " This is what the scenario expected."
	}
	return s + " This is NOT what the scenario expected: " + meta.Why + "."
}

func findingsSection(d *Document, sp Span, r *checker.Result) {
	d.H(2, fmt.Sprintf("Findings (%d)", len(r.Findings)))
	if len(r.Findings) == 0 {
		d.P(Txt("None."))
		return
	}
	groups := findingsByKey(r.Findings)
	if len(groups) == 1 {
		findingsTable(d, sp, r.Findings)
		return
	}
	// Several keys: one table per key, in key order ("" is the run as a
	// whole, or the implicit key of a history without keys).
	for _, g := range groups {
		name := "the run as a whole"
		if g.key != "" {
			name = "key " + g.key
		}
		d.H(3, fmt.Sprintf("%s (%s)", name, Plural(len(g.findings), "finding")))
		findingsTable(d, sp, g.findings)
	}
}

type keyGroup struct {
	key      string
	findings []checker.Finding
}

// findingsByKey groups findings by their key, keys in order, findings in
// time order within a key.
func findingsByKey(fs []checker.Finding) []keyGroup {
	at := map[string]int{}
	var out []keyGroup
	for _, f := range fs {
		i, ok := at[f.Key]
		if !ok {
			i = len(out)
			at[f.Key] = i
			out = append(out, keyGroup{key: f.Key})
		}
		out[i].findings = append(out[i].findings, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

func findingsTable(d *Document, sp Span, fs []checker.Finding) {
	t := Table{Header: []string{"#", "class", "kind", "clients", "leases", "from (s)", "to (s)", "length", "cycle", "faults around", "what happened"}}
	for i, f := range fs {
		if i == maxFindingRows {
			break
		}
		cyc := "—"
		if f.Cycle > 0 {
			cyc = fmt.Sprint(f.Cycle)
		}
		t.Rows = append(t.Rows, []Cell{
			Plain(fmt.Sprint(i + 1)),
			{Spans: []Inline{Bold(f.Class)}, Tone: classTone(f.Class)},
			Plain(OrDash(f.Kind)),
			Plain(OrDash(strings.Join(f.Clients, ", "))),
			Plain(OrDash(strings.Join(f.Leases, ", "))),
			Plain(sp.secs(f.From)),
			Plain(sp.secs(f.To)),
			Plain(Dur(f.To - f.From)),
			Plain(cyc),
			Plain(OrDash(strings.Join(f.Faults, ", "))),
			{Spans: []Inline{Bold(headline(f)), Txt(" " + f.Detail)}},
		})
	}
	d.Tab(t)
	if rest := len(fs) - maxFindingRows; rest > 0 {
		d.P(Txt(fmt.Sprintf("… and %d more findings, not shown here (all of them are in report.json).", rest)))
	}
}

// headline says in one short sentence what kind of thing a finding is.
func headline(f checker.Finding) string {
	switch {
	case f.Class == checker.ClassOverlap && f.Kind == "stale-access":
		return "Stale holder: a client used the resource after its hold had ended, while another client held the lock."
	case f.Class == checker.ClassOverlap:
		return "Two holders at once: both clients held valid leases at the same time."
	case f.Class == checker.ClassFenced:
		return "Overlap made harmless: two clients believed they held the lock, but fencing refused the stale one."
	case f.Class == checker.ClassCorruption:
		return "Lost update: two critical sections interleaved and one increment of the counter was lost."
	case f.Class == checker.ClassStuck:
		return "Lock stuck: clients kept trying but nobody could acquire it."
	case f.Class == checker.ClassFenceInversion:
		return "Fence inversion: the resource refused the legitimate holder because an earlier grant carried a larger token."
	case f.Class == checker.ClassStaleExtend:
		return "Stale extend: an extend succeeded on a lease the client had already released."
	case f.Class == checker.ClassUnknown:
		return "Cannot judge: this part of the history is not enough to say whether it is safe."
	case f.Class == checker.ClassDied:
		return "The lock's process died: a client's worker exited without the schedule killing it."
	}
	return f.Class + "."
}

func classTone(c string) int {
	switch c {
	case checker.ClassOverlap, checker.ClassCorruption, checker.ClassStuck, checker.ClassFenceInversion, checker.ClassStaleExtend, checker.ClassDied, checker.ClassUnknown:
		return -1
	}
	return 0
}

func cyclesSection(d *Document, sp Span, events []history.Event, r *checker.Result) {
	cs := Cycles(events)
	if len(cs) == 0 {
		return
	}
	d.H(2, "Per cycle")
	var rates []string
	for _, c := range r.Observed {
		hits, of := r.Rate(c)
		rates = append(rates, fmt.Sprintf("%s in %d/%d cycles", c, hits, of))
	}
	if len(rates) > 0 {
		d.P(Txt("Observed " + strings.Join(rates, "; ") + "."))
	}
	t := Table{Header: []string{"cycle", "starts at (s)", "faults", "observed"}}
	for i, c := range cs {
		if i == maxCycleRows {
			break
		}
		var faults []string
		for _, w := range r.Faults {
			if cycleAt(cs, w.Start) == c.N {
				faults = append(faults, FaultName(w))
			}
		}
		var obs []string
		if i < len(r.CycleObserved) {
			obs = r.CycleObserved[i]
		}
		t.Rows = append(t.Rows, []Cell{
			Plain(fmt.Sprint(c.N)), Plain(sp.secs(c.T)), Plain(OrDash(strings.Join(faults, ", "))),
			{Spans: []Inline{Txt(ClassList(obs))}, Tone: cycleTone(obs)},
		})
	}
	d.Tab(t)
	if rest := len(cs) - maxCycleRows; rest > 0 {
		d.P(Txt(fmt.Sprintf("… and %d more cycles (see report.json, result.cycle_observed).", rest)))
	}
}

func cycleTone(obs []string) int {
	for _, c := range obs {
		if classTone(c) < 0 {
			return -1
		}
	}
	return 0
}

// cycleAt numbers the cycle a time falls in, as the checker does (0: before
// the first cycle).
func cycleAt(cs []CycleStart, t int64) int {
	n := 0
	for _, c := range cs {
		if t >= c.T {
			n = c.N
		}
	}
	return n
}

func statsSection(d *Document, events []history.Event, r *checker.Result) {
	s := r.Stats
	d.H(2, "Statistics")
	rows := [][]Cell{
		{Plain("acquire attempts"), Plain(fmt.Sprint(s.Acquires))},
		{Plain("grants (acquire succeeded)"), Plain(fmt.Sprint(s.Grants))},
		{Plain("acquires refused / outcome unknown"), Plain(fmt.Sprintf("%d / %d", s.Fails, s.Unknown))},
		{Plain("critical sections completed"), Plain(fmt.Sprint(s.CriticalSecs))},
		{Plain("resource accesses refused by fencing"), Plain(fmt.Sprint(s.Rejected))},
		{Plain("acquire latency mean / p99"), Plain(Dur(s.MeanAcquireNs) + " / " + Dur(s.P99AcquireNs))},
		{Plain("longest time nobody held the lock while clients tried"), Plain(Dur(s.MaxUnavailable))},
		{Plain("availability penalty (fault start → next grant)"), Plain(penaltyText(r))},
	}
	if len(r.Stalls) > 0 {
		rows = append(rows, []Cell{Plain("the harness's own path stalled, no fault on (path-slow notes)"), Plain(stallText(r.Stalls))})
	}
	writes := acceptedWrites(events)
	val := fmt.Sprintf("%d, after %d accepted writes", s.FinalValue, writes)
	tone := 0
	if writes > 0 {
		if lost := writes - s.FinalValue; lost > 0 {
			val += fmt.Sprintf(": %s lost", Plural(int(lost), "increment"))
			tone = -1
		} else {
			val += ": none lost"
			tone = 1
		}
	}
	rows = append(rows, []Cell{Plain("final counter value"), {Spans: []Inline{Txt(val)}, Tone: tone}})
	d.Tab(Table{Header: []string{"measure", "value"}, Rows: rows})
}

// acceptedWrites counts the writes the resource accepted: each critical
// section increments the counter once, so without lost updates the final
// value equals this count.
func acceptedWrites(events []history.Event) int64 {
	var n int64
	for _, e := range events {
		if e.Kind == history.Access && e.Access == "write" && !e.Rejected && e.Value != nil {
			n++
		}
	}
	return n
}

// stallText sums the run's stalls: how many, how long together (counted
// once where they overlap), the longest.
func stallText(ws []checker.Window) string {
	var mx, end int64
	for _, w := range ws {
		mx, end = max(mx, w.End-w.Start), max(end, w.End)
	}
	total := checker.Stalled(ws, ws[0].Start, end)
	return fmt.Sprintf("%s, %s in all, the longest %s", Plural(len(ws), "stall"), Dur(total), Dur(mx))
}

func penaltyText(r *checker.Result) string {
	ps := r.Stats.PenaltyNs
	if len(ps) == 0 {
		return "—"
	}
	// The checker lists penalties in fault order, skipping faults after
	// which nobody was granted the lock: per-fault only when they line up.
	if len(ps) == len(r.Faults) && len(ps) <= 10 {
		var parts []string
		for i, p := range ps {
			parts = append(parts, FaultName(r.Faults[i])+" "+Dur(p))
		}
		return strings.Join(parts, ", ")
	}
	var sum, mx int64
	for _, p := range ps {
		sum += p
		mx = max(mx, p)
	}
	return fmt.Sprintf("mean %s, max %s over %d faults", Dur(sum/int64(len(ps))), Dur(mx), len(ps))
}

func faultsSection(d *Document, sp Span, meta Meta, r *checker.Result) {
	d.H(2, "Faults")
	if len(meta.Schedule) > 0 {
		d.P(Txt("The schedule:"))
		d.Preformatted(strings.Join(meta.Schedule, "\n"))
	}
	if len(r.Faults) == 0 {
		d.P(Txt("No fault was injected."))
		return
	}
	d.P(Txt("What was injected, as the history recorded it:"))
	t := Table{Header: []string{"fault", "target", "start (s)", "end (s)", "length"}}
	for i, w := range r.Faults {
		if i == maxWindowRows {
			break
		}
		end, length := "unhealed", Dur(sp.End-w.Start)+" (to the end)"
		if w.End != 0 {
			end, length = sp.secs(w.End), Dur(w.End-w.Start)
		}
		t.Rows = append(t.Rows, []Cell{Plain(w.Fault), Plain(OrDash(w.Target)), Plain(sp.secs(w.Start)), Plain(end), Plain(length)})
	}
	d.Tab(t)
	if rest := len(r.Faults) - maxWindowRows; rest > 0 {
		d.P(Txt(fmt.Sprintf("… and %d more fault windows (see report.json).", rest)))
	}
}

// effectsSection says, per fault step, what was seen of its effect (the
// runner's effect notes, and the steps that never reached the lock).
func effectsSection(d *Document, sp Span, events []history.Event) {
	t := Table{Header: []string{"at (s)", "cycle", "fault", "target", "effect", "what was seen"}}
	n := 0
	for _, e := range events {
		if e.Kind != history.Note {
			continue
		}
		var verdict string
		fault, target := e.Fault, e.Target
		switch e.Op {
		case checker.NoteEffect:
			verdict = "seen"
		case checker.NoteNoEffect:
			verdict = "NOT SEEN"
		case checker.NoteClockSeen, checker.NoteClockUnseen:
			// A client clock step, answered by its worker with the wall
			// time its lock reads.
			fault, target, verdict = "clock-client", e.Process, "seen"
			if e.Op == checker.NoteClockUnseen {
				verdict = "NOT SEEN"
			}
		case checker.NoteFired:
			fault, target, verdict = "failpoint", e.Process, "seen (fired)"
		case checker.NoteEffectPending:
			verdict = "judged at its heal"
		case checker.NoteEffectAtHeal:
			verdict = "seen (at its heal)"
		case checker.NoteEffectDuring:
			verdict = "while it lasted"
		case checker.NoteEffectUnchecked:
			verdict = "not checkable"
		case checker.NoteNotExercised:
			verdict = "NOT APPLIED"
		default:
			continue
		}
		n++
		if n > maxWindowRows {
			continue
		}
		t.Rows = append(t.Rows, []Cell{Plain(sp.secs(e.Time)), Plain(fmt.Sprint(e.Cycle)), Plain(OrDash(fault)), Plain(OrDash(target)),
			Toned(verdict, e.Op == checker.NoteEffect || e.Op == checker.NoteEffectAtHeal || e.Op == checker.NoteClockSeen || e.Op == checker.NoteFired || e.Op == checker.NoteEffectDuring), Plain(e.Detail)})
	}
	if n == 0 {
		return
	}
	d.H(3, "What each fault step was seen to do")
	d.P(Txt("Right after each step was applied the harness read its effect back (a stopped process, a pid gone, a role, a node's TIME, connections open on a link, the wall time a client's lock reads, a failpoint's firing). " +
		"A step whose effect was not seen leaves its cycle without evidence."))
	d.Tab(t)
	if rest := n - maxWindowRows; rest > 0 {
		d.P(Txt(fmt.Sprintf("… and %d more steps (see history.jsonl).", rest)))
	}
}

func OrDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
