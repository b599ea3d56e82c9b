package checker

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lockfault/lockfault/history"
)

// ClassDied: a client's worker process died without the schedule killing
// it (no crash failpoint, crash-client or clone heal explains it): the
// lock's process died, which is a lock (or worker) that failed, never safe.
const ClassDied = "died"

// Evidence says what a run must have done for "safe" to mean something
// (a scenario's evidence section; Required fills the defaults): per cycle,
// at least so many grants and completed critical sections (on any key),
// extends attempted and renewals, and the events that must follow the
// cycle's first fault.
type Evidence struct {
	Grants, Sections, Extends, Renewals int
	// AfterFault lists events that must happen after the cycle's first
	// fault began: grant, section, extend, renew.
	AfterFault []string
}

// Words of Evidence.AfterFault.
const (
	AfterGrant   = "grant"
	AfterSection = "section"
	AfterExtend  = "extend"
	AfterRenew   = "renew"
)

// AfterFaultWords lists the allowed words of Evidence.AfterFault.
var AfterFaultWords = []string{AfterGrant, AfterSection, AfterExtend, AfterRenew}

// DefaultEvidence is what every run must show per cycle unless its
// scenario says otherwise: a grant and a completed critical section.
var DefaultEvidence = Evidence{Grants: 1, Sections: 1}

// String says the requirement in words: "≥1 grant, ≥1 critical section per
// cycle; a grant after the fault".
func (e Evidence) String() string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("≥%d %s", n, what))
		}
	}
	add(e.Grants, "grant")
	add(e.Sections, "critical section")
	add(e.Extends, "extend")
	add(e.Renewals, "renewal")
	s := "nothing"
	if len(parts) > 0 {
		s = strings.Join(parts, ", ") + " per cycle"
	}
	if len(e.AfterFault) > 0 {
		s += "; after the fault: " + strings.Join(e.AfterFault, ", ")
	}
	return s
}

// EvidenceSummary is what a run showed against its requirement.
type EvidenceSummary struct {
	Required string `json:"required"`
	// Cycles of the run, and those that showed the evidence required
	// with every fault step seen to take effect (or a finding about the
	// lock, which is evidence of its own: an overlap, a stuck lock; not an
	// unknown, a not-exercised step or a worker that died by itself).
	Cycles, Shown int
	Grants        int `json:"grants"`
	Sections      int `json:"critical_sections"`
	// Steps: the fault steps whose effect was checked; Seen: those seen
	// to take effect; Unchecked: those the backend could not show.
	Steps     int `json:"fault_steps"`
	Seen      int `json:"fault_steps_seen"`
	Unchecked int `json:"fault_steps_unchecked,omitempty"`
	// Missing says, for each cycle without it, what was missing.
	Missing []string `json:"missing,omitempty"`
}

// Text is the summary in one line: "3 of 3 cycles with evidence (≥1 grant,
// ≥1 critical section per cycle), 41 grants, 41 critical sections, 3 of 3
// fault steps seen to take effect".
func (s EvidenceSummary) Text() string {
	t := fmt.Sprintf("%d of %d cycles with evidence (%s), %s, %s", s.Shown, s.Cycles, s.Required, plural(s.Grants, "grant"), plural(s.Sections, "critical section"))
	if s.Steps > 0 {
		t += fmt.Sprintf(", %d of %s seen to take effect", s.Seen, plural(s.Steps, "fault step"))
		if s.Unchecked > 0 {
			t += fmt.Sprintf(" (%d not checkable)", s.Unchecked)
		}
	}
	return t
}

// provesLock: a finding of this class is evidence that the cycle it is in
// exercised the lock (it says something about the lock). An unknown, a
// fault that never reached the lock, or a worker that died by itself, is
// not.
func provesLock(class string) bool {
	return class != ClassUnknown && class != ClassNotExercised && class != ClassDied
}

// evidencePass finds the clients whose worker died on its own (ClassDied),
// and the cycles that look safe but lack the evidence the scenario requires
// (ClassUnknown: the run proved nothing there). It runs after the other
// passes: a cycle with a finding has its evidence.
func evidencePass(in *input, found []Finding) (out []Finding, sum EvidenceSummary) {
	ev := history.CollectEvidence(in.events)
	req := *in.opt.Evidence
	sum.Required = req.String()
	starts := cycleStarts(in.events, &in.work)
	flagged := map[int]bool{}
	unreached := map[int][]string{} // per cycle: its faults that did not reach the lock
	for _, f := range found {
		c := cycleOf(starts, f.From)
		switch {
		case provesLock(f.Class):
			flagged[c] = true
		case f.Class == ClassNotExercised:
			unreached[c] = append(unreached[c], f.Detail)
		}
	}
	noEffect := stepEffects(in, starts, &sum)
	out = diedFindings(in, ev, starts)
	sections := sectionsByCycle(in.events, starts)
	in.work.add(len(in.events) + len(ev.Cycles) + len(found))
	for _, c := range ev.Cycles[1:] {
		var g, x, r int
		for _, k := range c.Keys {
			g, x, r = g+k.Grants, x+k.ExtendsAttempted, r+k.Renewals
		}
		s := sections[c.Cycle]
		sum.Cycles++
		sum.Grants += g
		sum.Sections += s
		var missing []string
		for _, need := range []struct {
			have, want int
			what       string
		}{{g, req.Grants, "grants"}, {s, req.Sections, "completed critical sections"}, {x, req.Extends, "extends"}, {r, req.Renewals, "renewals"}} {
			if need.have < need.want {
				missing = append(missing, fmt.Sprintf("%d %s (want ≥%d)", need.have, need.what, need.want))
			}
		}
		missing = append(missing, afterFault(in, starts, c.Cycle, req.AfterFault)...)
		if len(noEffect[c.Cycle]) > 0 {
			missing = append(missing, strings.Join(noEffect[c.Cycle], "; "))
		}
		if (len(missing) == 0 && len(unreached[c.Cycle]) == 0) || flagged[c.Cycle] {
			sum.Shown++
			continue
		}
		if len(missing) == 0 {
			// Only a fault that never reached the lock: its own finding
			// (not-exercised) says so.
			sum.Missing = append(sum.Missing, fmt.Sprintf("cycle %d proved nothing: %s", c.Cycle, strings.Join(unreached[c.Cycle], "; ")))
			continue
		}
		why := fmt.Sprintf("cycle %d proved nothing: %s", c.Cycle, strings.Join(missing, ", "))
		sum.Missing = append(sum.Missing, why)
		at := cycleStart(starts, c.Cycle)
		out = append(out, Finding{Class: ClassUnknown, From: at, To: at, Cycle: c.Cycle, Detail: why})
	}
	return out, sum
}

// stepEffects counts every fault step's effect, as the runner read it
// back, into sum, and returns per cycle the steps whose effect was not
// seen. A pending step (judged at its heal) is settled by the next
// effect-at-heal or no-effect note of the same fault, target and cycle;
// one never settled proves nothing.
func stepEffects(in *input, starts []int64, sum *EvidenceSummary) (noEffect map[int][]string) {
	noEffect = map[int][]string{}
	type step struct {
		fault, target string
		cycle         int
	}
	pending := map[step][]string{}
	for _, e := range in.events {
		if e.Kind != history.Note {
			continue
		}
		c := e.Cycle
		if c == 0 {
			c = cycleOf(starts, e.Time)
		}
		k := step{e.Fault, e.Target, c}
		switch e.Op {
		case NoteEffect:
			sum.Steps++
			sum.Seen++
		case NoteEffectUnchecked:
			sum.Steps++
			sum.Unchecked++
		case NoteEffectPending:
			sum.Steps++
			pending[k] = append(pending[k], e.Detail)
		case NoteEffectAtHeal:
			if len(pending[k]) > 0 {
				pending[k] = pending[k][1:]
				sum.Seen++
			}
		case NoteNoEffect:
			if len(pending[k]) > 0 {
				pending[k] = pending[k][1:]
			} else {
				sum.Steps++
			}
			noEffect[c] = append(noEffect[c], "no effect seen of "+e.Detail)
		case NoteNotExercised:
			if e.Fault != "" {
				sum.Steps++ // a step that could not be applied at all (its not-exercised finding says why)
			}
		}
	}
	keys := make([]step, 0, len(pending))
	for k := range pending {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		return cmp.Or(cmp.Compare(a.cycle, b.cycle), cmp.Compare(a.fault, b.fault), cmp.Compare(a.target, b.target)) < 0
	})
	for _, k := range keys {
		for _, d := range pending[k] {
			noEffect[k.cycle] = append(noEffect[k.cycle], "no effect judged of "+d+" (the run ended before its heal)")
		}
	}
	return noEffect
}

// diedFindings is a ClassDied finding for every worker that died without
// the schedule killing it. Deaths in the warmup (cycle 0) count too: the
// lock's process died.
func diedFindings(in *input, ev history.Evidence, starts []int64) (out []Finding) {
	if !slices.ContainsFunc(ev.Cycles, func(c history.CycleEvidence) bool { return len(c.Crashed) > 0 }) {
		return nil // no death: no second pass over the history
	}
	how := map[string]string{} // client: how its worker ended, from its crashed note ("signal: segmentation fault")
	for _, e := range in.events {
		if e.Kind == history.Note && e.Op == history.NoteCrashed {
			how[e.Process] = diedHow(e.Detail)
		}
	}
	in.work.add(len(in.events))
	for _, c := range ev.Cycles {
		at := cycleStart(starts, c.Cycle)
		if c.Cycle == 0 && len(in.events) > 0 {
			at = in.events[0].Time
		}
		for _, client := range c.Crashed {
			out = append(out, Finding{Class: ClassDied, Clients: []string{client}, From: at, To: at, Cycle: c.Cycle,
				Detail: fmt.Sprintf("the lock's process died: the worker of %s exited%s in cycle %d without the schedule killing it (workers.log has its last words)", client, how[client], c.Cycle)})
		}
	}
	return out
}

// diedHow is how a crashed note says the worker ended (" (signal:
// segmentation fault)", " (exit status 3)"), or "" when it does not say:
// the note reads "worker process died (how)", then what its stderr ended with.
func diedHow(detail string) string {
	const pre = "worker process died ("
	rest, ok := strings.CutPrefix(detail, pre)
	if !ok {
		return ""
	}
	how, _, ok := strings.Cut(rest, ")")
	if !ok || len(how) > 100 {
		return ""
	}
	return " (" + how + ")"
}

// sectionsByCycle counts the critical sections that completed, each in the
// cycle it began in (a section cut at the next cycle's quiesce still
// exercised the cycle it started in).
func sectionsByCycle(events []history.Event, starts []int64) map[int]int {
	began := map[int64]int64{}
	n := map[int]int{}
	for _, e := range events {
		if e.Op != history.OpCS {
			continue
		}
		switch e.Kind {
		case history.Invoke:
			began[e.OpID] = e.Time
		case history.OK:
			if t, ok := began[e.OpID]; ok {
				n[cycleOf(starts, t)]++
			}
		}
	}
	return n
}

// afterFault lists the events required after the cycle's first fault that
// never came.
func afterFault(in *input, starts []int64, cycle int, want []string) []string {
	if len(want) == 0 {
		return nil
	}
	from, to := int64(-1), int64(1<<62)
	if cycle < len(starts) {
		to = starts[cycle]
	}
	seen := map[string]bool{}
	begin := cycleStart(starts, cycle)
	// Only the cycle's own events (they are in time order).
	first := sort.Search(len(in.events), func(i int) bool { return in.events[i].Time >= begin })
	for _, e := range in.events[first:] {
		if e.Time >= to {
			break
		}
		in.work.add(1)
		if from < 0 {
			// A command held at the taps by an await (a fault window of
			// its own) is not the cycle's fault step: what the evidence
			// wants comes after the step's fault.
			if e.Kind == history.FaultStart && e.Fault != history.FaultCommandHold {
				from = e.Time
			}
			continue
		}
		switch {
		case e.Kind == history.OK && e.Op == history.OpAcquire:
			seen[AfterGrant] = true
		case e.Kind == history.OK && e.Op == history.OpCS:
			seen[AfterSection] = true
		case e.Kind == history.Invoke && e.Op == history.OpExtend:
			seen[AfterExtend] = true
		case e.Kind == history.Renew:
			seen[AfterRenew] = true
		}
	}
	if from < 0 {
		return []string{"no fault began"}
	}
	var missing []string
	for _, w := range want {
		if !seen[w] {
			missing = append(missing, "no "+w+" after the fault")
		}
	}
	return missing
}

// cycleStart is the time cycle c (1-based) began.
func cycleStart(starts []int64, c int) int64 {
	if c < 1 || c > len(starts) {
		return 0
	}
	return starts[c-1]
}

// ValidAfterFault checks a word of Evidence.AfterFault.
func ValidAfterFault(w string) error {
	if !slices.Contains(AfterFaultWords, w) {
		return fmt.Errorf("%q is not allowed (allowed: %s)", w, strings.Join(AfterFaultWords, ", "))
	}
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
