package hunt

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/scenarios"
)

// Schedule is one drawn experiment in the hunt's own terms: the topology,
// the workload and one cycle's faults on a timeline. Compile turns it into
// an ordinary scenario; the shrinker edits it.
type Schedule struct {
	Seed   int64 // the generator's seed
	Index  int   // which schedule of the seed (1-based)
	Shrink int   // which shrinking candidate of it (0: as drawn)

	Topology scenarios.Topology
	TTL      time.Duration
	Workload scenarios.Workload
	// Options are the lock's options for the run: those that turn on the
	// renewals a lock claims, when the holds outlast the TTL.
	Options map[string]string
	Cycles  int
	// Anchor starts each cycle: a grant (nil) or a command of the lock.
	Anchor *scenarios.CommandMatch
	// WhileFree: the cycle's faults come while nobody holds the lock
	// (between its quiesce and its resume), then the cycle waits for a
	// grant; Anchor is nil.
	WhileFree bool
	Events    []Event
	// Parent and Derived: a schedule the learning search derived from a
	// schedule of its corpus (its Index) by these mutations; 0 and nil for
	// a fresh draw.
	Parent  int      `json:",omitempty"`
	Derived []string `json:",omitempty"`
}

// Event is one fault of the cycle: injected At after the anchor, healed
// Dur later (Dur 0: a fault that needs no heal, such as crash-client).
type Event struct {
	At     time.Duration
	Fault  string
	Target string
	Dur    time.Duration
	Params map[string]string
}

func (e Event) String() string {
	s := fmt.Sprintf("%s(%s)", e.Fault, e.Target)
	if len(e.Params) > 0 {
		var ps []string
		for k, v := range e.Params {
			ps = append(ps, k+"="+v)
		}
		sort.Strings(ps)
		s += "{" + strings.Join(ps, ",") + "}"
	}
	s += fmt.Sprintf(" at +%v", e.At)
	if e.Dur > 0 {
		s += fmt.Sprintf(" for %v", e.Dur)
	}
	return s
}

// Faults lists the cycle's faults as text. An anchored cycle whose first
// fault is not injected at the anchor holds what the anchor matched until
// the next step (see runner's triggers): that hold is a fault of its own
// (a late request or reply, a client whose next commands wait), and is
// listed first.
func (s *Schedule) Faults() []string {
	out := make([]string, len(s.Events))
	for i, e := range s.Events {
		out[i] = e.String()
	}
	if s.WhileFree && len(out) > 0 {
		out[0] = "while the lock is free: " + out[0]
	}
	if s.Anchor == nil {
		return out
	}
	if held := s.anchorHold(); held > 0 {
		what := map[string]string{scenarios.AtRequest: "the request", scenarios.AtReply: "the reply",
			scenarios.AtAfterReply: "the client's next commands"}[s.Anchor.At]
		if what == "" {
			what = "the request"
		}
		out = append([]string{fmt.Sprintf("%s held %v", what, held)}, out...)
	}
	out[0] = "after command " + s.Anchor.String() + ": " + out[0]
	return out
}

// anchorHold is how long an anchored cycle holds what its anchor matched:
// until its first step after the await, the first fault (none at once:
// 0) or the settling sleep when it has none.
func (s *Schedule) anchorHold() time.Duration {
	first := 2 * s.TTL // the settling sleep Compile ends each cycle with
	for _, e := range s.Events {
		first = min(first, e.At)
	}
	return first
}

// clone copies a schedule deeply enough for the shrinker to edit it.
func (s *Schedule) clone() *Schedule {
	c := *s
	c.Events = make([]Event, len(s.Events))
	for i, e := range s.Events {
		c.Events[i] = e
		if e.Params != nil {
			c.Events[i].Params = map[string]string{}
			for k, v := range e.Params {
				c.Events[i].Params[k] = v
			}
		}
	}
	if s.Anchor != nil {
		a := *s.Anchor
		c.Anchor = &a
	}
	c.Options = maps.Clone(s.Options)
	c.Derived = slices.Clone(s.Derived)
	return &c
}

// Name is the scenario name of the schedule.
func (s *Schedule) Name() string {
	if s.Shrink > 0 {
		return fmt.Sprintf("hunt-%d-%d-s%d", s.Seed, s.Index, s.Shrink)
	}
	return fmt.Sprintf("hunt-%d-%d", s.Seed, s.Index)
}

// Compile writes the schedule as a scenario (YAML) for lock: each cycle
// waits for the lock to be free (quiesce, resume), for the anchor, then
// injects and heals the faults on their timeline and lets the lock settle
// for two TTLs. A cycle of faults while the lock is free injects them
// before its resume and waits for a grant after it.
func (s *Schedule) Compile(name, lock string, expect []string) *scenarios.Scenario {
	sc := &scenarios.Scenario{
		Name:        name,
		Description: fmt.Sprintf("drawn by the hunt (seed %d, schedule %d): %s", s.Seed, s.Index, strings.Join(s.Faults(), "; ")),
		Topology:    s.Topology,
		Lock:        scenarios.Lock{Name: lock, TTL: scenarios.Duration(s.TTL), Wait: scenarios.Duration(s.TTL * 3 / 2), Options: maps.Clone(s.Options)},
		Workload:    s.Workload,
		Expect:      expect,
		// The faults may stop every grant for as long as they last: only a
		// lock that grants nothing for longer than that and two TTLs is
		// stuck.
		StuckAfter: scenarios.Duration(s.span() + stuckSlack(s.Topology.Kind == lockfault.Etcd, s.TTL)),
	}
	sc.Allow = []string{"unavailable", "not-exercised", "fenced"}
	n := &sc.Nemesis
	n.Cycles = s.Cycles
	n.Warmup = scenarios.Duration(300 * time.Millisecond)
	n.Steps = append(n.Steps, scenarios.Step{Quiesce: true})
	within := scenarios.Duration(4 * s.TTL)
	if s.WhileFree {
		within += scenarios.Duration(s.span()) // the nodes come back first
	}
	start := func() {
		n.Steps = append(n.Steps, scenarios.Step{Resume: true})
		if s.Anchor != nil {
			m := *s.Anchor
			n.Steps = append(n.Steps, scenarios.Step{Await: scenarios.AwaitCommand, Command: &m, Within: within})
		} else {
			n.Steps = append(n.Steps, scenarios.Step{Await: "grant", Within: within})
		}
	}
	if !s.WhileFree {
		start()
	}
	type point struct {
		at   time.Duration
		heal bool
		e    Event
	}
	var pts []point
	for _, e := range s.Events {
		pts = append(pts, point{at: e.At, e: e})
		if e.Dur > 0 {
			pts = append(pts, point{at: e.At + e.Dur, heal: true, e: e})
		}
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].at < pts[j].at })
	var now time.Duration
	for _, p := range pts {
		if d := p.at - now; d > 0 {
			n.Steps = append(n.Steps, scenarios.Step{Sleep: scenarios.Duration(d)})
			now = p.at
		}
		if p.heal {
			n.Steps = append(n.Steps, scenarios.Step{Heal: p.e.Fault})
			continue
		}
		n.Steps = append(n.Steps, faultSteps(p.e)...)
	}
	if s.WhileFree {
		start()
	}
	n.Steps = append(n.Steps, scenarios.Step{Sleep: scenarios.Duration(2 * s.TTL)}, scenarios.Step{Heal: "all"})
	return sc
}

// faultSteps are the steps that inject a fault. A slot migration's move
// step MIGRATEs to a destination that imports the slot: the hunt's "move"
// is its begin, then its move, at the same moment (one heal finishes both).
func faultSteps(e Event) []scenarios.Step {
	st := scenarios.Step{Fault: e.Fault, Target: e.Target, Params: e.Params}
	if e.Fault != "cluster-migrate-slot" || e.Params["step"] != "move" {
		return []scenarios.Step{st}
	}
	begin := st
	begin.Params = maps.Clone(e.Params)
	begin.Params["step"] = "begin"
	return []scenarios.Step{begin, st}
}

// span is how long the cycle's faults last from the anchor: until the last
// one is healed, or a node it killed is back (a kill's or power loss's
// restart delay).
func (s *Schedule) span() time.Duration {
	var d time.Duration
	for _, e := range s.Events {
		d = max(d, e.At+e.Dur)
		if r, err := time.ParseDuration(e.Params["restart"]); err == nil {
			d = max(d, e.At+r)
		}
	}
	return d
}

// clientTarget: a fault on clients.
func clientFault(name string) bool {
	switch name {
	case "pause-client", "crash-client", "clone-client", "clock-client":
		return true
	}
	return false
}

// linkTargets are the nodes whose client links the generator cuts or
// slows: a cluster client sends nothing to a replica (its reads and writes
// go to the masters), so a link fault there would have no effect and its
// cycle prove nothing; the other topologies' draws are nodeTargets', as
// before.
func linkTargets(t scenarios.Topology) []string {
	if t.Kind == lockfault.Cluster {
		return []string{lockfault.TargetKeyMaster}
	}
	return nodeTargets(t)
}

// nodeTargets are the node targets the generator draws for a topology.
func nodeTargets(t scenarios.Topology) []string {
	switch t.Kind {
	case lockfault.Masters:
		return []string{lockfault.TargetMaster, lockfault.TargetMinority, lockfault.TargetMajority, lockfault.TargetAll}
	case lockfault.Replicated:
		return []string{lockfault.TargetPrimary, lockfault.TargetReplica}
	case lockfault.Etcd:
		return []string{lockfault.TargetEtcd}
	case lockfault.Cluster:
		return []string{lockfault.TargetKeyMaster, lockfault.TargetKeyReplica}
	}
	return []string{lockfault.TargetPrimary}
}
