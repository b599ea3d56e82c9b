package reports

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
func runDocument(meta Meta, events []history.Event, res *checker.Result, have map[string]bool) *document {
	d := &document{}
	sp := runSpan(events, res)
	r := res
	if r == nil {
		r = &checker.Result{}
	}

	d.h(1, fmt.Sprintf("lockfault: %s × %s", meta.Scenario, meta.Label()))
	if meta.Interrupted {
		d.callout(bold("Interrupted."), txt(" The run was cut short (Ctrl-C): everything below covers only the part of the run before it stopped."))
	}
	if meta.Error != "" {
		d.callout(bold("Harness error:"), txt(" "+meta.Error), txt(" — the test itself failed, so the verdict below may not say anything about the lock."))
	}
	if meta.Claim != "" {
		d.p(bold("Claim:"), txt(" "+meta.Claim))
	}
	if meta.Description != "" {
		d.p(txt(meta.Description))
	}

	d.h(2, "Verdict")
	d.p(txt(verdictSentence(meta, r)))
	exp := classList(meta.Expect)
	if len(meta.Allow) > 0 {
		exp += " (tolerated: " + strings.Join(meta.Allow, ", ") + ")"
	}
	d.tab(table{header: []string{"", ""}, rows: [][]cell{
		{plain("observed verdict"), {spans: []inline{bold(verdictOf(res))}}},
		{plain("all classes observed"), plain(classList(r.Observed))},
		{plain("expected"), plain(exp)},
		{plain("matched"), toned(yesNo(meta.Matched)+" — "+meta.Why, meta.Matched)},
		{plain("linearizability of the critical sections (porcupine)"), plain(orDash(r.Linearizable))},
	}})
	if ev := r.Evidence; ev != nil {
		d.p(bold("Evidence:"), txt(" "+ev.Text()+"."))
		if len(ev.Missing) > 0 {
			var items [][]inline
			for _, m := range ev.Missing {
				items = append(items, item(txt(m)))
			}
			d.ul(items...)
		}
	}

	if have[FileTimeline] {
		d.h(2, "Timeline")
		d.p(txt("One lane per client. Bars are holds of the lock (acquired → released, expired or crashed); " +
			"a thin pale bar after a hold means the client still touched the resource after its hold had ended. " +
			"Shaded vertical bands are fault windows. Red marks two clients holding the lock at once, orange an overlap " +
			"that fencing made harmless, a red ✕ a lost update. Dashed lines are cycle starts."))
		d.img("timeline", FileTimeline)
	}

	findingsSection(d, sp, r)
	cyclesSection(d, sp, events, r)
	statsSection(d, events, r)
	faultsSection(d, sp, meta, r)
	effectsSection(d, sp, events)

	d.h(2, "Files")
	var items [][]inline
	for _, f := range []struct{ name, what string }{
		{FileTimeline, "the timeline picture"},
		{FileLinearize, "porcupine's view of the critical sections (open in a browser; fault windows are annotated)"},
		{FileHistory, "every event of the run, one JSON object per line"},
		{FileJSON, "this report for tools"},
		{FileHTML, "this report as one self-contained page"},
		{FileMarkdown, "this report"},
	} {
		if have[f.name] {
			items = append(items, item(link(f.name, f.name), txt(" — "+f.what)))
		}
	}
	d.ul(items...)

	d.h(2, "Run")
	run := [][]cell{
		{plain("run id"), plain(orDash(meta.RunID))},
		{plain("backend"), plain(orDash(meta.Backend))},
		{plain("seed"), plain(fmt.Sprint(meta.Seed))},
	}
	if !meta.Started.IsZero() {
		run = append(run, []cell{plain("started"), plain(meta.Started.Format(time.RFC3339))})
	}
	run = append(run, []cell{plain("duration"), plain(meta.Duration.Round(time.Millisecond).String())})
	d.tab(table{header: []string{"", ""}, rows: run})
	return d
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
		n := countClasses(r.Findings)
		var parts []string
		for _, c := range checker.Classes {
			if n[c] > 0 {
				parts = append(parts, plural(n[c], c+" finding"))
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

func findingsSection(d *document, sp span, r *checker.Result) {
	d.h(2, fmt.Sprintf("Findings (%d)", len(r.Findings)))
	if len(r.Findings) == 0 {
		d.p(txt("None."))
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
		d.h(3, fmt.Sprintf("%s (%s)", name, plural(len(g.findings), "finding")))
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

func findingsTable(d *document, sp span, fs []checker.Finding) {
	t := table{header: []string{"#", "class", "kind", "clients", "leases", "from (s)", "to (s)", "length", "cycle", "faults around", "what happened"}}
	for i, f := range fs {
		if i == maxFindingRows {
			break
		}
		cyc := "—"
		if f.Cycle > 0 {
			cyc = fmt.Sprint(f.Cycle)
		}
		t.rows = append(t.rows, []cell{
			plain(fmt.Sprint(i + 1)),
			{spans: []inline{bold(f.Class)}, tone: classTone(f.Class)},
			plain(orDash(f.Kind)),
			plain(orDash(strings.Join(f.Clients, ", "))),
			plain(orDash(strings.Join(f.Leases, ", "))),
			plain(sp.secs(f.From)),
			plain(sp.secs(f.To)),
			plain(dur(f.To - f.From)),
			plain(cyc),
			plain(orDash(strings.Join(f.Faults, ", "))),
			{spans: []inline{bold(headline(f)), txt(" " + f.Detail)}},
		})
	}
	d.tab(t)
	if rest := len(fs) - maxFindingRows; rest > 0 {
		d.p(txt(fmt.Sprintf("… and %d more findings, not shown here (all of them are in report.json).", rest)))
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

func cyclesSection(d *document, sp span, events []history.Event, r *checker.Result) {
	cs := cycles(events)
	if len(cs) == 0 {
		return
	}
	d.h(2, "Per cycle")
	var rates []string
	for _, c := range r.Observed {
		hits, of := r.Rate(c)
		rates = append(rates, fmt.Sprintf("%s in %d/%d cycles", c, hits, of))
	}
	if len(rates) > 0 {
		d.p(txt("Observed " + strings.Join(rates, "; ") + "."))
	}
	t := table{header: []string{"cycle", "starts at (s)", "faults", "observed"}}
	for i, c := range cs {
		if i == maxCycleRows {
			break
		}
		var faults []string
		for _, w := range r.Faults {
			if cycleAt(cs, w.Start) == c.n {
				faults = append(faults, faultName(w))
			}
		}
		var obs []string
		if i < len(r.CycleObserved) {
			obs = r.CycleObserved[i]
		}
		t.rows = append(t.rows, []cell{
			plain(fmt.Sprint(c.n)), plain(sp.secs(c.t)), plain(orDash(strings.Join(faults, ", "))),
			{spans: []inline{txt(classList(obs))}, tone: cycleTone(obs)},
		})
	}
	d.tab(t)
	if rest := len(cs) - maxCycleRows; rest > 0 {
		d.p(txt(fmt.Sprintf("… and %d more cycles (see report.json, result.cycle_observed).", rest)))
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
func cycleAt(cs []cycleStart, t int64) int {
	n := 0
	for _, c := range cs {
		if t >= c.t {
			n = c.n
		}
	}
	return n
}

func statsSection(d *document, events []history.Event, r *checker.Result) {
	s := r.Stats
	d.h(2, "Statistics")
	rows := [][]cell{
		{plain("acquire attempts"), plain(fmt.Sprint(s.Acquires))},
		{plain("grants (acquire succeeded)"), plain(fmt.Sprint(s.Grants))},
		{plain("acquires refused / outcome unknown"), plain(fmt.Sprintf("%d / %d", s.Fails, s.Unknown))},
		{plain("critical sections completed"), plain(fmt.Sprint(s.CriticalSecs))},
		{plain("resource accesses refused by fencing"), plain(fmt.Sprint(s.Rejected))},
		{plain("acquire latency mean / p99"), plain(dur(s.MeanAcquireNs) + " / " + dur(s.P99AcquireNs))},
		{plain("longest time nobody held the lock while clients tried"), plain(dur(s.MaxUnavailable))},
		{plain("availability penalty (fault start → next grant)"), plain(penaltyText(r))},
	}
	if len(r.Stalls) > 0 {
		rows = append(rows, []cell{plain("the harness's own path stalled, no fault on (path-slow notes)"), plain(stallText(r.Stalls))})
	}
	writes := acceptedWrites(events)
	val := fmt.Sprintf("%d, after %d accepted writes", s.FinalValue, writes)
	tone := 0
	if writes > 0 {
		if lost := writes - s.FinalValue; lost > 0 {
			val += fmt.Sprintf(": %s lost", plural(int(lost), "increment"))
			tone = -1
		} else {
			val += ": none lost"
			tone = 1
		}
	}
	rows = append(rows, []cell{plain("final counter value"), {spans: []inline{txt(val)}, tone: tone}})
	d.tab(table{header: []string{"measure", "value"}, rows: rows})
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
	return fmt.Sprintf("%s, %s in all, the longest %s", plural(len(ws), "stall"), dur(total), dur(mx))
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
			parts = append(parts, faultName(r.Faults[i])+" "+dur(p))
		}
		return strings.Join(parts, ", ")
	}
	var sum, mx int64
	for _, p := range ps {
		sum += p
		mx = max(mx, p)
	}
	return fmt.Sprintf("mean %s, max %s over %d faults", dur(sum/int64(len(ps))), dur(mx), len(ps))
}

func faultsSection(d *document, sp span, meta Meta, r *checker.Result) {
	d.h(2, "Faults")
	if len(meta.Schedule) > 0 {
		d.p(txt("The schedule:"))
		d.preformatted(strings.Join(meta.Schedule, "\n"))
	}
	if len(r.Faults) == 0 {
		d.p(txt("No fault was injected."))
		return
	}
	d.p(txt("What was injected, as the history recorded it:"))
	t := table{header: []string{"fault", "target", "start (s)", "end (s)", "length"}}
	for i, w := range r.Faults {
		if i == maxWindowRows {
			break
		}
		end, length := "unhealed", dur(sp.end-w.Start)+" (to the end)"
		if w.End != 0 {
			end, length = sp.secs(w.End), dur(w.End-w.Start)
		}
		t.rows = append(t.rows, []cell{plain(w.Fault), plain(orDash(w.Target)), plain(sp.secs(w.Start)), plain(end), plain(length)})
	}
	d.tab(t)
	if rest := len(r.Faults) - maxWindowRows; rest > 0 {
		d.p(txt(fmt.Sprintf("… and %d more fault windows (see report.json).", rest)))
	}
}

// effectsSection says, per fault step, what was seen of its effect (the
// runner's effect notes, and the steps that never reached the lock).
func effectsSection(d *document, sp span, events []history.Event) {
	t := table{header: []string{"at (s)", "cycle", "fault", "target", "effect", "what was seen"}}
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
		t.rows = append(t.rows, []cell{plain(sp.secs(e.Time)), plain(fmt.Sprint(e.Cycle)), plain(orDash(fault)), plain(orDash(target)),
			toned(verdict, e.Op == checker.NoteEffect || e.Op == checker.NoteClockSeen || e.Op == checker.NoteFired || e.Op == checker.NoteEffectDuring), plain(e.Detail)})
	}
	if n == 0 {
		return
	}
	d.h(3, "What each fault step was seen to do")
	d.p(txt("Right after each step was applied the harness read its effect back (a stopped process, a pid gone, a role, a node's TIME, connections open on a link, the wall time a client's lock reads, a failpoint's firing). " +
		"A step whose effect was not seen leaves its cycle without evidence."))
	d.tab(t)
	if rest := n - maxWindowRows; rest > 0 {
		d.p(txt(fmt.Sprintf("… and %d more steps (see history.jsonl).", rest)))
	}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
