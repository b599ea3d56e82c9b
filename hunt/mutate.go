package hunt

import (
	"slices"
	"strings"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/resp"
	"github.com/lockfault/lockfault/scenarios"
)

// Mutations derive a schedule from a parent of the corpus: each changes
// one thing, drawn from the same lists as the generator's, plus the
// lengths and moments the tuned generator had special cases for (a pause
// until the next holder's hold, 0.3 TTL after a grant's reply): here they
// are values among others, and the feedback keeps what covers something.
var mutations = []struct {
	name string
	f    func(g *Generator, s, other *Schedule) bool
}{
	{"move", (*Generator).mutMove},
	{"length", (*Generator).mutLength},
	{"kind", (*Generator).mutKind},
	{"target", (*Generator).mutTarget},
	{"anchor", (*Generator).mutAnchor},
	{"add", (*Generator).mutAdd},
	{"drop", (*Generator).mutDrop},
	{"workload", (*Generator).mutWorkload},
	{"splice", (*Generator).mutSplice},
}

// maxEvents bounds a derived cycle's faults (the generator draws 1 to 3).
const maxEvents = 4

// Mutate derives a schedule from parent (and other, for a splice): one to
// three mutations. It names what it did (Derived).
func (g *Generator) Mutate(parent, other *Schedule) *Schedule {
	s := parent.clone()
	s.Shrink = 0
	s.Derived = nil
	n := 1 + g.rng.IntN(3)
	for tries := 0; len(s.Derived) < n && tries < 20; tries++ {
		m := mutations[g.rng.IntN(len(mutations))]
		if m.f(g, s, other) {
			s.Derived = append(s.Derived, m.name)
		}
	}
	g.fix(s)
	return s
}

// atGrid and lengthGrid are the moments and lengths (in TTLs) a mutation
// draws: the generator's, with finer steps.
var (
	atGrid     = []float64{0, 0.1, 0.2, 0.3, 0.5, 0.9, 1.2}
	lengthGrid = []float64{0.15, 0.3, 0.6, 0.9, 1.1, 1.6, 2.5}
)

func (g *Generator) some(s *Schedule) int {
	if len(s.Events) == 0 {
		return -1
	}
	return g.rng.IntN(len(s.Events))
}

func (g *Generator) mutMove(s, _ *Schedule) bool {
	i := g.some(s)
	if i < 0 || s.WhileFree {
		return false
	}
	s.Events[i].At = scale(s.TTL, g.pick(atGrid...))
	return true
}

func (g *Generator) mutLength(s, _ *Schedule) bool {
	i := g.some(s)
	if i < 0 || s.Events[i].Dur == 0 || s.WhileFree {
		return false
	}
	e := &s.Events[i]
	if e.Fault == "pause-client" && g.chance(0.25) {
		e.Dur = resumeInNextHold(s) // until the next holder's hold
		return true
	}
	e.Dur = scale(s.TTL, g.pick(lengthGrid...))
	return true
}

func (g *Generator) mutKind(s, _ *Schedule) bool {
	i := g.some(s)
	if i < 0 || s.WhileFree {
		return false
	}
	f := g.of(g.space.Faults)
	if s.hasFault(f) || s.conflictBut(i, f) {
		return false
	}
	e := g.event(f, s)
	e.At = s.Events[i].At
	if s.Events[i].Target == lockfault.TargetTrigger && clientFault(f) {
		e.Target = lockfault.TargetTrigger
	}
	s.Events[i] = e
	return true
}

func (g *Generator) mutTarget(s, _ *Schedule) bool {
	i := g.some(s)
	if i < 0 || s.WhileFree {
		return false
	}
	e := &s.Events[i]
	d := g.event(e.Fault, s)
	if clientFault(e.Fault) && g.chance(0.4) {
		d.Target = lockfault.TargetHolder
		if s.Anchor != nil && g.chance(0.5) {
			d.Target = lockfault.TargetTrigger
		}
	}
	if d.Target == e.Target && sameParams(d.Params, e.Params) {
		return false
	}
	e.Target = d.Target
	if e.Fault != "clock-client" { // a clock step's params are its size
		e.Params = d.Params
	}
	return true
}

func sameParams(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func (g *Generator) mutAnchor(s, _ *Schedule) bool {
	if s.WhileFree {
		return false
	}
	shapes := g.shapesFor(s.Workload)
	if len(shapes) == 0 || (s.Anchor != nil && g.chance(0.2)) {
		if s.Anchor == nil {
			return false
		}
		s.Anchor = nil // a grant
		return true
	}
	if len(grantShapes(shapes)) > 0 && g.chance(0.3) {
		// The successful reply of an acquire or an extend: the moment a lock
		// dates the validity it reports.
		sh := g.of(names(grantShapes(shapes)))
		op := ""
		for _, c := range shapes {
			if c.Name == sh {
				op = c.Op
			}
		}
		s.Anchor = &scenarios.CommandMatch{Name: firstWord(sh), Op: op, At: g.of([]string{scenarios.AtReply, scenarios.AtAfterReply}), Reply: scenarios.ReplyOK}
	} else {
		s.Anchor = g.plainAnchor(shapes)
	}
	if i := slices.IndexFunc(s.Events, func(e Event) bool { return e.At == 0 && clientFault(e.Fault) }); i >= 0 && g.chance(0.7) {
		s.Events[i].Target = lockfault.TargetTrigger
	}
	return true
}

func (g *Generator) mutAdd(s, _ *Schedule) bool {
	if len(s.Events) >= maxEvents || s.WhileFree {
		return false
	}
	f := g.of(g.space.Faults)
	if s.hasFault(f) || s.conflictBut(-1, f) {
		return false
	}
	e := g.event(f, s)
	e.At = scale(s.TTL, g.pick(atGrid...))
	s.Events = append(s.Events, e)
	return true
}

func (g *Generator) mutDrop(s, _ *Schedule) bool {
	i := g.some(s)
	if i < 0 || len(s.Events) < 2 {
		return false
	}
	s.Events = slices.Delete(s.Events, i, i+1)
	return true
}

// mutWorkload changes one thing the clients do: a hold until the
// validity the lock reported (or not), extends across a TTL or more, a
// validity check before each write, or a new draw of the workload.
func (g *Generator) mutWorkload(s, _ *Schedule) bool {
	w := &s.Workload
	switch g.rng.IntN(4) {
	case 0:
		if w.Hold.D() >= s.TTL {
			return false
		}
		if w.HoldUntilValid > 0 {
			w.HoldUntilValid = 0
		} else {
			w.HoldUntilValid = scenarios.Duration(scale(s.TTL, 0.1))
		}
	case 1:
		if !g.space.has(lockimpl.CapExtend) || w.Reentry > 1 {
			return false
		}
		w.ExtendEvery = scenarios.Duration(scale(s.TTL, g.pick(0.3, 0.6)))
		w.Extends = g.of2(1, int(scale(s.TTL, extendAcrossTTLs)/w.ExtendEvery.D())+1)
	case 2:
		if w.Hold.D() >= s.TTL {
			return false
		}
		if w.WriteIfValid > 0 {
			w.WriteIfValid = 0
		} else {
			w.WriteIfValid = scenarios.Duration(scale(s.TTL, 0.05))
		}
	default:
		*w = g.workload(s.TTL)
	}
	return true
}

func (g *Generator) of2(a, b int) int {
	if g.chance(0.5) {
		return a
	}
	return b
}

// mutSplice: the faults up to a point of this schedule, the rest from
// another of the corpus (same topology and TTL).
func (g *Generator) mutSplice(s, other *Schedule) bool {
	if other == nil || other.WhileFree || s.WhileFree || other.TTL != s.TTL || other.Topology != s.Topology || len(other.Events) == 0 {
		return false
	}
	k := g.rng.IntN(len(s.Events) + 1)
	out := slices.Clone(s.Events[:k])
	for _, e := range other.Events[g.rng.IntN(len(other.Events)):] {
		if len(out) < maxEvents && !slices.ContainsFunc(out, func(x Event) bool { return x.Fault == e.Fault || clusterConflict(x.Fault, e.Fault) }) {
			if e.Target == lockfault.TargetTrigger && s.Anchor == nil {
				e.Target = lockfault.TargetHolder
			}
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return false
	}
	s.Events = out
	return true
}

// fix keeps a derived schedule one the runner accepts: a trigger target
// needs a command anchor; a crashed client is restarted; renewals are on
// when the holds outlast the TTL; an extend anchor needs extends; a
// cluster fault's length fits its params, and a cluster failover's cycle
// has no other fault on the key's replica.
func (g *Generator) fix(s *Schedule) {
	if s.Anchor != nil && s.Anchor.Op == scenarios.OpExtend && s.Workload.Extends == 0 {
		s.Anchor = nil
	}
	for i := range s.Events {
		if s.Events[i].Target == lockfault.TargetTrigger && s.Anchor == nil {
			s.Events[i].Target = lockfault.TargetHolder
		}
	}
	s.Options = nil
	if s.Workload.Hold.D() > s.TTL {
		s.Options = renewalOptions(g.space.Info, s.TTL)
	}
	if s.Workload.Hold.D() >= s.TTL {
		s.Workload.HoldUntilValid, s.Workload.WriteIfValid = 0, 0
	}
	s.Workload.RestartCrashed = 0
	if s.hasFault("crash-client") {
		s.Workload.RestartCrashed = scenarios.Duration(crashedFor)
	}
	s.Events = slices.DeleteFunc(s.Events, func(e Event) bool { return onCrashed(s, e) })
	for i := range s.Events {
		fitCluster(&s.Events[i], s)
	}
	fitFailoverTargets(s)
}

// fitCluster keeps a cluster fault's length what its params need after a
// mutation changed one of them: a whole migration has none, a half-done one
// needs one (its heal finishes it); a minority cut lasts longer than the
// node timeout, or nothing is failed over.
func fitCluster(e *Event, s *Schedule) {
	switch {
	case e.Fault == "cluster-migrate-slot" && e.Params["step"] == "all":
		e.Dur = 0
	case e.Fault == "cluster-migrate-slot" && e.Dur == 0:
		e.Dur = s.TTL
	case e.Fault == "cluster-minority-partition" && e.Dur <= nodeTimeout(s.Topology):
		e.Dur += nodeTimeout(s.Topology)
	}
}

// crashedFor is how long a crashed client of a hunt's schedule stays down
// (its workload's restart_crashed).
const crashedFor = 300 * time.Millisecond

// onCrashed: e is a fault on a client that a crash of the same client in
// the same cycle has killed at that moment or a little before (the client
// is down until its restart): a pause or a clock step of a dead process
// attacks nothing (a derived schedule crashed c1 and paused c1 at the same
// moment, and the pause found no process).
func onCrashed(s *Schedule, e Event) bool {
	if e.Fault == "crash-client" || !clientFault(e.Fault) {
		return false
	}
	return slices.ContainsFunc(s.Events, func(c Event) bool {
		return c.Fault == "crash-client" && c.Target == e.Target && e.At >= c.At && e.At < c.At+crashedFor
	})
}

// conflictBut: a fault of the cycle other than its i-th conflicts with f
// (clusterConflict).
func (s *Schedule) conflictBut(i int, f string) bool {
	for j, e := range s.Events {
		if j != i && clusterConflict(f, e.Fault) {
			return true
		}
	}
	return false
}

func (s *Schedule) hasFault(f string) bool {
	return slices.ContainsFunc(s.Events, func(e Event) bool { return e.Fault == f })
}

func names(shapes []resp.Shape) []string {
	var out []string
	for _, c := range shapes {
		out = append(out, c.Name)
	}
	return out
}

func firstWord(s string) string { return strings.Fields(s)[0] }
