package hunt

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/resp"
	"github.com/lockfault/lockfault/scenarios"
	"github.com/lockfault/lockfault/suite"
)

// Space is what the generator draws from: the lock (its needs and
// capabilities), the faults that apply to its topology minus those of its
// known limits, and the commands it was seen to send.
type Space struct {
	Info   lockimpl.Info
	Known  []string // known limits (Limits' names)
	Faults []string // the fault kinds drawn
	// Commands are the shapes of the commands the lock sent in earlier
	// schedules: command-level anchors are drawn from them.
	Commands []resp.Shape
}

// faultsFor lists the fault kinds that apply to a topology kind.
func faultsFor(kind lockfault.TopologyKind) []string {
	client := []string{"pause-client", "crash-client", "clone-client", "clock-client"}
	switch kind {
	case lockfault.Etcd:
		return append(client, "pause-node", "kill", "latency", "partition-client")
	case lockfault.Replicated:
		return append(client, "pause-node", "kill", "power-loss", "restart", "latency", "partition-client", "partition-peer", "promote", "clock-jump", "clock-drift")
	case lockfault.Cluster:
		// The node faults of one master and its replica (the key's), the
		// replication link's cut (partition-peer), and the cluster's own
		// failovers, slot migration and minority split.
		out := append(client, "pause-node", "kill", "power-loss", "restart", "latency", "partition-client", "partition-peer", "clock-jump", "clock-drift")
		return append(out, clusterFaults...)
	}
	return append(client, "pause-node", "kill", "power-loss", "restart", "latency", "partition-client", "clock-jump", "clock-drift")
}

// clusterFaults are the faults of a Redis Cluster alone (a cycle draws at
// most one of them: see clusterFault).
var clusterFaults = []string{"cluster-failover", "cluster-manual-failover", "cluster-migrate-slot", "cluster-minority-partition"}

// clusterFault: one of clusterFaults. Two of them in one cycle would
// mostly fail the run, not the lock: a manual failover sent to the
// replica a failover has just made a master (or to the old master, down),
// a slot migrating from a master that is being failed over (see
// clusterConflict for the other faults they are not drawn with).
func clusterFault(f string) bool { return slices.Contains(clusterFaults, f) }

// manualModes are cluster-manual-failover's modes: default loses nothing
// (the replica first reaches its master's offset), force and takeover
// may lose what was not replicated (the failover limit's).
var manualModes = []string{"default", "force", "takeover"}

// NewSpace is the space of a lock with the given known limits.
func NewSpace(info lockimpl.Info, known []string) *Space {
	sp := &Space{Info: info, Known: known}
	ex := excluded(known)
	for _, f := range faultsFor(sp.topologyKind()) {
		if !slices.Contains(ex, f) && (f != "cluster-manual-failover" || len(sp.values(f, "mode", manualModes)) > 0) {
			sp.Faults = append(sp.Faults, f)
		}
	}
	return sp
}

// values are the values of a fault's param the space draws: all but those
// its known limits exclude (Limit.Modes).
func (sp *Space) values(fault, param string, all []string) []string {
	ex := excludedModes(sp.Known, fault, param)
	return slices.DeleteFunc(slices.Clone(all), func(v string) bool { return slices.Contains(ex, v) })
}

// topologyKind is the kind of topology the lock runs on in a hunt: its
// masters, or etcd; a single-master lock that claims to survive failover
// (it waits for replicas) runs replicated, any other on one node.
func (sp *Space) topologyKind() lockfault.TopologyKind {
	switch sp.Info.Needs {
	case lockfault.NeedsMasters:
		return lockfault.Masters
	case lockfault.NeedsEtcd:
		return lockfault.Etcd
	case lockfault.NeedsCluster:
		return lockfault.Cluster
	}
	if slices.Contains(sp.Info.Caps, lockimpl.CapReplicaAck) && !slices.Contains(sp.Known, "failover") {
		return lockfault.Replicated
	}
	return lockfault.Standalone
}

func (sp *Space) has(c string) bool { return slices.Contains(sp.Info.Caps, c) }

// Generator draws schedules from a seed: the same seed and the same seen
// commands give the same schedules.
type Generator struct {
	Seed  int64
	space *Space
	rng   *rand.Rand
	n     int
	// plain: no tuned special case (the learning search's fresh draws,
	// see plain.go): every kind, target, anchor and length is drawn
	// uniformly from its list; the feedback finds what the special cases
	// were added for.
	plain bool
}

// NewGenerator returns the generator of a seed over a space.
func NewGenerator(sp *Space, seed int64) *Generator {
	return &Generator{Seed: seed, space: sp, rng: rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x5851f42d4c957f2d))}
}

func (g *Generator) pick(xs ...float64) float64 { return xs[g.rng.IntN(len(xs))] }
func (g *Generator) chance(p float64) bool      { return g.rng.Float64() < p }
func (g *Generator) of(xs []string) string      { return xs[g.rng.IntN(len(xs))] }

// scale is d times f, rounded to milliseconds.
func scale(d time.Duration, f float64) time.Duration {
	return time.Duration(float64(d) * f).Round(time.Millisecond)
}

// Next draws the next schedule. The first one of a seed has no fault: it
// shows what the lock does unharmed and which commands it sends.
func (g *Generator) Next() *Schedule {
	g.n++
	sp := g.space
	s := &Schedule{Seed: g.Seed, Index: g.n, Cycles: 2}
	s.TTL = time.Duration(g.pick(1, 2)) * time.Second
	s.Topology = scenarios.Topology{Kind: sp.topologyKind(), Persistence: "aof-always"}
	switch s.Topology.Kind {
	case lockfault.Masters:
		s.Topology.Masters = 3
	case lockfault.Replicated:
		s.Topology.Replicas, s.Topology.Sentinels = 1, 0
	case lockfault.Etcd:
		s.Topology.Persistence = ""
	case lockfault.Cluster:
		s.Topology.Masters, s.Topology.Replicas = 3, 1
	}
	s.Workload = g.workload(s.TTL)
	if s.Workload.Hold.D() > s.TTL {
		s.Options = renewalOptions(sp.Info, s.TTL)
	}
	if g.n == 1 {
		return s
	}
	if sp.restartsCold() && g.chance(coldRestart) {
		s.Topology.Persistence = "none"
		s.WhileFree = true
		s.Events = []Event{{Fault: "kill", Target: lockfault.TargetAll, Params: map[string]string{"restart": "0s"}}}
		return s
	}
	nf := 1 + g.rng.IntN(3)
	if shapes := g.shapesFor(s.Workload); len(shapes) > 0 && g.chance(anchored) {
		s.Anchor = g.anchor(shapes)
	}
	used := map[string]bool{}
	for i := 0; i < nf && len(used) < len(sp.Faults); i++ {
		f := g.of(sp.Faults)
		if i == 0 {
			f = g.firstFault()
			if !g.plain && datesValidity(s.Anchor) && f != "pause-client" && slices.Contains(sp.Faults, "pause-client") && g.chance(pauseAtGrant) {
				f = "pause-client"
			}
		}
		if used[f] {
			i--
			continue
		}
		markUsed(used, f, sp.Faults)
		e := g.event(f, s)
		if i == 0 {
			e.At = 0
			switch {
			case s.Anchor != nil && clientFault(f):
				e.Target = lockfault.TargetTrigger
			case g.plain:
			case f == "pause-client" && g.chance(0.5):
				// At a grant, the client whose pause matters is the holder
				// (stopped in its critical section); a waiting client's
				// pause is a slow retry.
				e.Target = lockfault.TargetHolder
			}
			switch {
			case g.plain || f != "pause-client" || e.Target == "":
			case stopsBeforeDating(s, e):
				if g.chance(stopBeforeDatingShare) {
					e.Dur = scale(s.TTL, stopBeforeDating)
				}
			case g.chance(intoNextHold):
				e.Dur = resumeInNextHold(s)
			}
		}
		s.Events = append(s.Events, e)
	}
	g.aimClockStep(s)
	g.fitWorkload(s)
	fitFailoverTargets(s)
	return s
}

// fitFailoverTargets: in a cycle with a cluster failover the other faults
// on the key's replica hit the key's master instead. Once the cluster has
// promoted the replica, the new master has no replica until the heal
// brings the old master back (a partition-client of key-replica there
// was refused: "matches no node"), and the key's master is the node that
// holds the key. Other cycles are left as they are.
func fitFailoverTargets(s *Schedule) {
	if !s.hasFault("cluster-failover") {
		return
	}
	for i := range s.Events {
		if s.Events[i].Target == lockfault.TargetKeyReplica {
			s.Events[i].Target = lockfault.TargetKeyMaster
		}
	}
}

// markUsed marks a fault a cycle has drawn, and the faults of the space
// that conflict with it (clusterConflict).
func markUsed(used map[string]bool, f string, space []string) {
	used[f] = true
	for _, c := range space {
		if clusterConflict(f, c) {
			used[c] = true
		}
	}
}

// clusterConflict: faults a cycle on a cluster does not draw together,
// because the run, not the lock, would fail: two cluster faults (see
// clusterFault); a cluster fault and a node of the key's master and
// replica down, stopped or restarting (a slot migrating from a master
// that restarts answers CLUSTERDOWN; a failover waits for a replica
// that is down); the replication link cut and a manual failover (the
// replica never catches up) or the minority cut (which cuts that link
// too). Not on other topologies: they have no cluster fault.
func clusterConflict(a, b string) bool {
	if !clusterFault(a) {
		a, b = b, a
	}
	switch {
	case !clusterFault(a):
		return false
	case clusterFault(b):
		return true
	case b == "partition-peer":
		return a != "cluster-failover" && a != "cluster-migrate-slot"
	}
	return slices.Contains([]string{"kill", "power-loss", "restart", "pause-node"}, b)
}

// coldRestart is the share of a fencing lock's schedules (after the
// first) whose nodes keep nothing on disk and are killed and restarted
// while nobody holds the lock (restartsCold): they lose no grant, only
// what the lock keeps beside its keys. Fencing tokens must still grow
// (fencing/node-restart): a lock that counts them in a node's memory
// starts again from 1, and the resource refuses its new holders. The
// hunt's other schedules keep every write (appendfsync always), where no
// restart loses anything.
const coldRestart = 0.1

// restartsCold: the lock claims fencing, runs on Redis, and its known
// limits leave node kills in the space (a lock whose tokens do not
// survive a restart says node-restart, as fenced's promise table does).
// Only such a space draws cold restarts, so no other space's draws change.
func (sp *Space) restartsCold() bool {
	return sp.has(lockimpl.CapFencing) && sp.topologyKind() != lockfault.Etcd && slices.Contains(sp.Faults, "kill")
}

// Weights of the cycle's first fault, the one injected at the anchor (a
// grant, or a command of the lock): a client stopped, or its clock
// stepped, at that moment is the attack the literature argues about (a
// stop-the-world pause inside the lock's own steps or its critical
// section, Kleppmann; a wall clock that moves, antirez), and each is found
// only when it lands there, which the faults after the first do by
// chance. The other kinds share what is left.
const (
	firstPause = 0.25
	firstClock = 0.1
)

// firstFault draws the cycle's first fault: pause-client and clock-client
// weigh more than the other kinds (see firstPause), when the space has
// them.
func (g *Generator) firstFault() string {
	if g.plain {
		return g.of(g.space.Faults)
	}
	r := g.rng.Float64()
	switch {
	case r < firstPause && slices.Contains(g.space.Faults, "pause-client"):
		return "pause-client"
	case r >= firstPause && r < firstPause+firstClock && slices.Contains(g.space.Faults, "clock-client"):
		return "clock-client"
	}
	return g.of(g.space.Faults)
}

// intoNextHold is the share of the cycle's other first pauses (of the
// client the cycle starts with) that last until the middle of the next holder's hold
// (resumeInNextHold) instead of a multiple of the TTL.
const intoNextHold = 0.4

// stopBeforeDating is how long (in TTLs) a client is stopped once its
// acquire or extend succeeded, before its lock dates the validity it
// reports, in stopBeforeDatingShare of the draws: longer than the margin a
// careful client leaves (0.1 TTL), shorter than what is left of the
// validity it had before an extend (an extend whose reply comes after that
// validity ended does not count), so a lock that dates the validity from
// the reply overstates it by the pause.
const (
	stopBeforeDating      = 0.3
	stopBeforeDatingShare = 0.7
)

// resumeInNextHold is how long a pause of the client the cycle starts with
// lasts for it to resume halfway through the next holder's hold: what is
// left of its key's TTL at the anchor (all of it at a grant or an acquire,
// the TTL less the hold at a release), then half a hold. That is the pause
// the literature argues about: the client wakes while another holds the
// lock and acts on a lock it believes it still has (its write, or a
// release that reads, then deletes, the next holder's key). A multiple of
// the TTL lands there only for some holds: broken-get-then-del's stale
// DEL needs it, and a client to take the key before the next holder
// releases.
func resumeInNextHold(s *Schedule) time.Duration {
	hold := s.Workload.Hold.D()
	if v := s.Workload.HoldUntilValid.D(); v > 0 {
		hold = s.TTL - v
	}
	left := s.TTL
	if s.Anchor != nil && s.Anchor.Op == scenarios.OpRelease && hold < s.TTL {
		left -= hold
	}
	return (left + hold/2).Round(time.Millisecond)
}

// aimClockStep: a client's clock step matters most inside the lock's own
// acquire (a lock that measures the acquire's duration on the wall clock
// then reports a validity the key does not have), and a step lands inside
// a sub-millisecond acquire only by aim. So half of the schedules that
// step a client's clock back, and have no anchor yet, anchor the cycle on
// an acquire's command before it is sent and step the clock of the client
// whose command fired.
func (g *Generator) aimClockStep(s *Schedule) {
	if g.plain || s.Anchor != nil {
		return
	}
	i := slices.IndexFunc(s.Events, func(e Event) bool {
		return e.Fault == "clock-client" && strings.HasPrefix(e.Params["by"], "-")
	})
	if i < 0 {
		return
	}
	var acq []resp.Shape
	for _, c := range g.shapesFor(s.Workload) {
		if c.Op == scenarios.OpAcquire {
			acq = append(acq, c)
		}
	}
	if len(acq) == 0 || !g.chance(0.5) {
		return
	}
	sh := acq[g.rng.IntN(len(acq))]
	s.Anchor = &scenarios.CommandMatch{Name: strings.Fields(sh.Name)[0], Op: sh.Op, At: scenarios.AtRequest}
	e := s.Events[i]
	e.At, e.Target = 0, lockfault.TargetTrigger
	delete(e.Params, "every")
	s.Events = append([]Event{e}, slices.Delete(s.Events, i, i+1)...)
}

// workload draws what the clients do: how many, holds relative to the TTL
// (a careful client's hold lasts until shortly before the validity the lock
// reported), think times, keys, extends, re-entry, old-lease releases.
func (g *Generator) workload(ttl time.Duration) scenarios.Workload {
	sp := g.space
	w := scenarios.Workload{Clients: 2 + g.rng.IntN(2), Resource: "order"}
	w.Hold = scenarios.Duration(scale(ttl, g.pick(0.1, 0.3, 0.6)))
	w.Think = scenarios.Duration(scale(ttl, g.pick(0, 0.05, 0.3)))
	if g.chance(0.3) {
		w.Keys = 2
	}
	if sp.has(lockimpl.CapWatchdog) && (g.n == 1 || g.chance(0.5)) {
		// The lock renews a live holder: holds longer than the TTL, with
		// its renewals on (renewalOptions); always in the first schedule,
		// which has no fault: unharmed, a live holder keeps its lock.
		w.Hold = scenarios.Duration(scale(ttl, g.pick(1.5, 2.5)))
	} else if g.chance(0.4) {
		w.HoldUntilValid = scenarios.Duration(scale(ttl, 0.1))
	}
	if sp.has(lockimpl.CapFencing) {
		w.Fencing = true
	}
	switch {
	case sp.has(lockimpl.CapReentrant) && g.chance(0.4) && !slices.Contains(sp.Known, "reentry"):
		// A lock whose known limits say it does not count re-entries
		// (reentry) is hunted for something else.
		w.Reentry = 2 + g.rng.IntN(2)
	case sp.has(lockimpl.CapExtend) && g.chance(0.4):
		w.Extends = 1 + g.rng.IntN(3)
		w.ExtendEvery = scenarios.Duration(scale(ttl, g.pick(0.3, 0.6)))
		if g.chance(0.3) {
			w.ReleaseOld = true
		}
	case g.chance(0.25):
		w.ReleaseOld = true
	}
	if w.Hold.D() < ttl && g.chance(0.2) {
		w.WriteIfValid = scenarios.Duration(scale(ttl, 0.05))
	}
	return w
}

// renewalOptions turn on the renewals a lock claims, with a lease of one
// TTL, as the suite's renewal properties do (those of the options the lock
// declares). Without them a lock such as redisson takes the TTL as a fixed
// lease, and a hold longer than it tests nothing the lock claims.
func renewalOptions(info lockimpl.Info, ttl time.Duration) map[string]string {
	return info.Declared(suite.RenewalOptions(ttl))
}

// fitWorkload fits the workload to the faults drawn: a workload that loses
// clients (crash-client) restarts them, so the cycles after keep running;
// one whose clients' clocks are stepped, or whose replies are late, mostly
// trusts the validity the lock reports (holds until shortly before it
// ends), or a validity measured wrong would move only what nobody reads;
// one whose holder extends while nodes are harmed mostly extends across
// the harm (see extendAcross).
func (g *Generator) fitWorkload(s *Schedule) {
	w := &s.Workload
	for _, e := range s.Events {
		switch {
		case e.Fault == "crash-client":
			w.RestartCrashed = scenarios.Duration(300 * time.Millisecond)
		case g.plain:
			continue
		}
		switch e.Fault {
		case "clock-client", "latency", "pause-client":
			// A validity measured on a stepped clock, or from a late reply
			// instead of the request (or from a reply the client was
			// stopped after), shows only to a client that trusts it.
			if e.Fault == "pause-client" && !stopsBeforeDating(s, e) {
				continue
			}
			if w.HoldUntilValid == 0 && w.WriteIfValid == 0 && w.Hold.D() < s.TTL && g.chance(0.7) {
				w.HoldUntilValid = scenarios.Duration(scale(s.TTL, 0.1))
			}
			if e.Fault == "pause-client" && s.Anchor.Op == scenarios.OpExtend && w.Extends > 1 {
				// The anchor fires on the round's first extend; the validity
				// the client trusts is its last one's, so one extend a round.
				w.Extends = 1
			}
		case "kill", "power-loss", "pause-node", "partition-client":
			g.extendAcross(s)
		}
	}
}

// datesValidity: the anchor is the reply of an acquire or an extend, after
// which the lock dates the validity it reports.
func datesValidity(a *scenarios.CommandMatch) bool {
	return a != nil && a.At != scenarios.AtRequest && (a.Op == scenarios.OpAcquire || a.Op == scenarios.OpExtend)
}

// stopsBeforeDating: a fault on the client whose acquire or extend reply
// fired the anchor, before its lock dates the validity it reports.
func stopsBeforeDating(s *Schedule, e Event) bool {
	return e.Target == lockfault.TargetTrigger && datesValidity(s.Anchor)
}

// extendAcrossTTLs is how long a holder that extends across a node fault
// keeps extending, in TTLs: past the longest fault drawn (1.6 TTL, or a
// restart 1.5 TTL late) and a TTL more, when the keys the fault took
// have expired and another client can be granted.
const extendAcrossTTLs = 2.5

// extendAcross: an extend is tested when the nodes that hold the key are
// harmed for longer than the TTL (a majority's keys expire or vanish while
// the holder extends on what is left). One to three extends end before
// most such faults do; so in most schedules that harm nodes while a holder
// extends, the holder keeps extending for extendAcrossTTLs, as a suite
// property's holder does (extend/majority-restart: 12 extends) and as a
// watchdog's holder renews; and half of such schedules of a lock that can
// extend, whose holders did not, have them extend.
func (g *Generator) extendAcross(s *Schedule) {
	w := &s.Workload
	if w.Extends == 0 {
		if !g.space.has(lockimpl.CapExtend) || w.Reentry > 1 || !g.chance(0.5) {
			return
		}
		w.Extends, w.ExtendEvery = 1, scenarios.Duration(scale(s.TTL, g.pick(0.3, 0.6)))
	}
	if time.Duration(w.Extends)*w.ExtendEvery.D() >= scale(s.TTL, extendAcrossTTLs) || !g.chance(0.7) {
		return
	}
	w.Extends = int(math.Ceil(float64(scale(s.TTL, extendAcrossTTLs)) / float64(w.ExtendEvery.D())))
}

// shapesFor are the seen commands of the operations a workload performs
// (an extend's commands only when it extends).
func (g *Generator) shapesFor(w scenarios.Workload) []resp.Shape {
	var out []resp.Shape
	for _, c := range g.space.Commands {
		if c.Op == scenarios.OpExtend && w.Extends == 0 {
			continue
		}
		out = append(out, c)
	}
	return out
}

// anchored is the share of cycles anchored on a command of the lock
// (the others start at a grant).
const anchored = 0.5

// anchor draws a command boundary from the commands the lock was seen to
// send: a command of one of its operations, before it is sent, when its
// reply comes back, or once the client has read the reply. Most anchors
// are inside the lock's own steps, where nothing but a command trigger can
// stop the client: innerAnchor of them are commands of an operation that
// sends more than one kind of command (the release that reads, then
// deletes: a boundary between two of its steps, where a lock that is not
// atomic breaks), grantAnchor are the successful reply of an acquire or
// an extend (the key is set, and the lock has yet to date the validity it
// reports).
func (g *Generator) anchor(shapes []resp.Shape) *scenarios.CommandMatch {
	if g.plain {
		return g.plainAnchor(shapes)
	}
	r := g.rng.Float64()
	in, granting := innerShapes(shapes), grantShapes(shapes)
	switch {
	case r < innerAnchor && len(in) > 0:
		shapes = in
	case r >= innerAnchor && r < innerAnchor+grantAnchor && len(granting) > 0:
		sh := granting[g.rng.IntN(len(granting))]
		at := g.of([]string{scenarios.AtReply, scenarios.AtAfterReply})
		return &scenarios.CommandMatch{Name: strings.Fields(sh.Name)[0], Op: sh.Op, At: at, Reply: scenarios.ReplyOK}
	}
	sh := shapes[g.rng.IntN(len(shapes))]
	m := &scenarios.CommandMatch{Name: strings.Fields(sh.Name)[0], Op: sh.Op, At: g.of([]string{scenarios.AtRequest, scenarios.AtReply, scenarios.AtAfterReply})}
	if m.At != scenarios.AtRequest {
		m.Reply = scenarios.ReplyAny
		if g.chance(okReply) {
			m.Reply = scenarios.ReplyOK
		}
	}
	return m
}

// Shares of the anchors drawn among the commands of operations that send
// more than one kind of command (innerAnchor), and among the successful
// replies of acquires and extends (grantAnchor); the rest among every
// command the lock sends.
const (
	innerAnchor = 0.55
	grantAnchor = 0.2
)

// pauseAtGrant: at an anchor that is the successful reply of an acquire or
// an extend, half of the first faults that are not a client pause become
// one (stopBeforeDating: the pause a lock that dates its validity from
// the reply cannot see).
const pauseAtGrant = 0.5

// okReply is the share of the other reply anchors that match a reply
// saying the command did what it was sent for (the key set, read or
// extended): a client stopped after a failed acquire is a slow retry, one
// stopped after a read of its own token is inside the lock.
const okReply = 0.75

// grantShapes are the shapes of the operations that report a validity
// (acquire, extend).
func grantShapes(shapes []resp.Shape) []resp.Shape {
	var out []resp.Shape
	for _, c := range shapes {
		if c.Op == scenarios.OpAcquire || c.Op == scenarios.OpExtend {
			out = append(out, c)
		}
	}
	return out
}

// innerShapes are the shapes of the operations with more than one shape.
func innerShapes(shapes []resp.Shape) []resp.Shape {
	n := map[string]int{}
	for _, c := range shapes {
		n[c.Op]++
	}
	var out []resp.Shape
	for _, c := range shapes {
		if n[c.Op] > 1 {
			out = append(out, c)
		}
	}
	return out
}

// event draws one fault: its target, its start (relative to the TTL and
// the hold) and its length (shorter than, near and longer than the TTL).
func (g *Generator) event(f string, s *Schedule) Event {
	ttl := s.TTL
	e := Event{Fault: f, At: scale(ttl, g.pick(0, 0.2, 0.5, 0.9, 1.2)), Dur: scale(ttl, g.pick(0.3, 0.9, 1.1, 1.6))}
	clients := []string{lockfault.TargetHolder, lockfault.TargetOthers, "c1"}
	switch f {
	case "pause-client", "clone-client":
		e.Target = g.of(clients)
	case "crash-client":
		e.Target, e.Dur = g.of(clients), 0
	case "clock-client":
		e.Target = g.of(clients)
		forward := g.chance(0.5)
		e.Params = map[string]string{"by": signed(scale(ttl, g.pick(0.5, 1.5)), forward)}
		if !forward && g.chance(g.tuned(0.75, 0.5)) {
			// A time daemon gone wrong: the clock keeps stepping back, every
			// 10 ms while the fault lasts, so the lock's own steps (an
			// acquire, a validity check) span a step. One step rarely falls
			// inside a millisecond's acquire; a lock that measures validity
			// on the wall clock is found only this way unless a command
			// trigger times the step.
			e.Params["every"] = "10ms"
		}
	case "kill", "power-loss":
		e.Target = g.of(nodeTargets(s.Topology))
		e.Params = map[string]string{"restart": scale(ttl, g.pick(0, 0.5, 1.5)).String()}
		e.Dur = 0
	case "restart":
		e.Target, e.Dur = g.of(nodeTargets(s.Topology)), 0
	case "latency":
		e.Target = g.of(linkTargets(s.Topology))
		e.Params = map[string]string{"latency": scale(ttl, g.pick(0.05, 0.3, 0.6)).String(), "jitter": "0s",
			"clients": g.of([]string{"all", "c1"})}
	case "partition-client":
		e.Target = g.of(linkTargets(s.Topology))
		e.Params = map[string]string{"clients": g.of([]string{"all", "c1", "holder"}), "mode": g.of([]string{"reset", "drop"})}
	case "partition-peer":
		e.Target = lockfault.TargetPrimary
		if s.Topology.Kind == lockfault.Cluster {
			e.Target = lockfault.TargetKeyMaster // the key's master from its replica
		}
	case "cluster-failover", "cluster-manual-failover", "cluster-migrate-slot", "cluster-minority-partition":
		g.clusterEvent(&e, s)
	case "promote":
		e.Target, e.Dur = lockfault.TargetReplica, 0
	case "clock-jump":
		e.Target = g.of(nodeTargets(s.Topology))
		e.Params = map[string]string{"by": signed(scale(ttl, g.pick(0.5, 1.5)), true)}
	case "clock-drift":
		e.Target = g.of(nodeTargets(s.Topology))
		e.Params = map[string]string{"rate": g.of([]string{"200ms", "500ms"})}
	default: // pause-node
		e.Target = g.of(nodeTargets(s.Topology))
	}
	return e
}

// clusterEvent draws a cluster fault's target and params; its moment and
// length are event's. The cluster's failover of the key's master (killed
// or stopped, until the old master is back as a replica: the length); a
// manual failover on the key's replica (in the modes the known limits
// leave; nothing to heal); a migration of the key's slot, all at once or
// left half done (marked migrating; or its keys moved too) for the length,
// after which the heal finishes it; the key's master cut off in a minority
// with none, one or some clients on its side, for longer than the node
// timeout (the majority fails it over meanwhile) by the length.
func (g *Generator) clusterEvent(e *Event, s *Schedule) {
	e.Target = lockfault.TargetKeyMaster
	switch e.Fault {
	case "cluster-failover":
		e.Params = map[string]string{"how": g.of([]string{"kill", "pause"})}
	case "cluster-manual-failover":
		e.Target, e.Dur = lockfault.TargetKeyReplica, 0
		e.Params = map[string]string{"mode": g.of(g.space.values(e.Fault, "mode", manualModes))}
	case "cluster-migrate-slot":
		e.Params = map[string]string{"step": g.of([]string{"all", "begin", "move"})}
		if e.Params["step"] == "all" {
			e.Dur = 0
		}
	case "cluster-minority-partition":
		e.Params = map[string]string{}
		if c := g.of([]string{"none", "c1", lockfault.TargetHolder, lockfault.TargetOthers}); c != "none" {
			e.Params["clients"] = c
		}
		e.Dur += nodeTimeout(s.Topology)
	}
}

// nodeTimeout is a cluster's cluster-node-timeout: a master cut off for
// less is not failed over.
func nodeTimeout(t scenarios.Topology) time.Duration {
	if d := t.NodeTimeout.D(); d > 0 {
		return d
	}
	return cluster.DefaultNodeTimeout
}

func signed(d time.Duration, forward bool) string {
	if forward {
		return "+" + d.String()
	}
	return "-" + d.String()
}

// Covered counts the fault kinds a list of schedules drew.
func Covered(ss []*Schedule) map[string]int {
	out := map[string]int{}
	for _, s := range ss {
		for _, e := range s.Events {
			out[e.Fault]++
		}
		if s.Anchor != nil {
			out[fmt.Sprintf("command:%s@%s", s.Anchor.Op, s.Anchor.At)]++
		}
	}
	return out
}
