package scenarios

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockfault/lockfault/checker"
)

// Validate checks the scenario's structure and fills defaults. Names of
// locks and faults are checked by the runner against their registries
// (through ErrAt), since this package does not know them.
func (s *Scenario) Validate() error {
	if s.Name == "" {
		return s.ErrAt("name", "missing; give the scenario a name")
	}
	t := &s.Topology
	switch t.Kind {
	case "standalone":
	case "replicated":
		if t.Replicas < 1 {
			return s.ErrAt("topology.replicas", "a replicated topology needs replicas >= 1, got %d", t.Replicas)
		}
		if t.Sentinels != 0 && (t.Sentinels < 3 || t.Sentinels%2 == 0) {
			return s.ErrAt("topology.sentinels", "use 0, or an odd number >= 3, got %d", t.Sentinels)
		}
	case "masters":
		if t.Masters < 1 || t.Masters > 15 {
			return s.ErrAt("topology.masters", "want 1 to 15 independent masters, got %d", t.Masters)
		}
	case "etcd":
	case "":
		return s.ErrAt("topology.kind", "missing (allowed: standalone, replicated, masters, etcd)")
	default:
		return s.ErrAt("topology.kind", "%q is not allowed (allowed: standalone, replicated, masters, etcd)", t.Kind)
	}
	switch t.Persistence {
	case "", "none", "aof-always", "aof-everysec":
	default:
		return s.ErrAt("topology.persistence", "%q is not allowed (allowed: none, aof-always, aof-everysec)", t.Persistence)
	}
	if s.Lock.Name == "" {
		return s.ErrAt("lock.name", "missing; name a lock (see `simulate list`)")
	}
	if s.Lock.TTL.D() <= 0 {
		return s.ErrAt("lock.ttl", "missing; the lease time, e.g. 2s")
	}
	if s.Lock.Wait == 0 {
		s.Lock.Wait = s.Lock.TTL
	}
	w := &s.Workload
	if w.Clients < 1 || w.Clients > 64 {
		return s.ErrAt("workload.clients", "want 1 to 64 clients, got %d", w.Clients)
	}
	if w.Resource == "" {
		w.Resource = "order"
	}
	if strings.ContainsAny(w.Resource, " \t\n") {
		return s.ErrAt("workload.resource", "must not contain white space")
	}
	if w.Reentry < 0 || w.Reentry > 16 {
		return s.ErrAt("workload.reentry", "want 0 to 16 acquires per round, got %d", w.Reentry)
	}
	if w.Reentry == 0 {
		w.Reentry = 1
	}
	switch w.Quiesce {
	case "":
		w.Quiesce = QuiesceWait
	case QuiesceWait, QuiesceCut:
	default:
		return s.ErrAt("workload.quiesce", "%q is not allowed (allowed: wait, cut)", w.Quiesce)
	}
	switch w.Round {
	case "":
		w.Round = RoundHarness
	case RoundHarness:
	case RoundWorker:
		if w.Reentry > 1 || w.Extends > 0 || w.ReleaseOld || w.HoldUntilValid > 0 {
			return s.ErrAt("workload.round", "worker runs plain rounds only (no reentry, extends, release_old, hold_until_valid)")
		}
	default:
		return s.ErrAt("workload.round", "%q is not allowed (allowed: harness, worker)", w.Round)
	}
	if w.Keys < 0 || w.Keys > 64 {
		return s.ErrAt("workload.keys", "want 0 to 64 keys, got %d", w.Keys)
	}
	if w.Extends < 0 || w.Extends > 100 {
		return s.ErrAt("workload.extends", "want 0 to 100 extends per round, got %d", w.Extends)
	}
	if w.Extends > 0 && (w.ExtendEvery.D() <= 0 || w.ExtendEvery.D() > time.Hour) {
		return s.ErrAt("workload.extend_every", "want a duration between 1ms and 1h when extends > 0, got %v", w.ExtendEvery.D())
	}
	if w.HoldUntilValid.D() < 0 || w.HoldUntilValid.D() > time.Hour {
		return s.ErrAt("workload.hold_until_valid", "want 0 (off) to 1h, got %v", w.HoldUntilValid.D())
	}
	n := &s.Nemesis
	if n.Cycles < 0 || n.Cycles > 1000 {
		return s.ErrAt("nemesis.cycles", "want 0 to 1000, got %d", n.Cycles)
	}
	if n.Cycles == 0 {
		n.Cycles = 1
	}
	if n.Random != nil && len(n.Steps) > 0 {
		return s.ErrAt("nemesis.random", "give either steps or random, not both")
	}
	for i := range n.Steps {
		if err := s.validateStep(i); err != nil {
			return err
		}
	}
	if r := n.Random; r != nil {
		if len(r.Faults) == 0 {
			return s.ErrAt("nemesis.random.faults", "list the faults to choose from")
		}
		if r.Interval.D() <= 0 {
			return s.ErrAt("nemesis.random.interval", "missing; mean time between faults, e.g. 2s")
		}
		if r.For.D() <= 0 {
			return s.ErrAt("nemesis.random.for", "missing; how long each fault lasts, e.g. 1s")
		}
	}
	if len(s.Expect) == 0 {
		return s.ErrAt("expect", "missing; the verdict this scenario expects (%s)", strings.Join(checker.Classes, ", "))
	}
	for i, c := range s.Expect {
		if err := checker.ValidClass(c); err != nil {
			return s.ErrAt(fmt.Sprintf("expect.%d", i), "%v", err)
		}
	}
	for i, c := range s.Allow {
		if err := checker.ValidClass(c); err != nil || c == checker.ClassSafe {
			return s.ErrAt(fmt.Sprintf("allow.%d", i), "%q: allow lists extra classes tolerated (%s)", c, "overlap, corruption, fenced, stuck")
		}
	}
	return nil
}

func (s *Scenario) validateStep(i int) error {
	st := &s.Nemesis.Steps[i]
	path := fmt.Sprintf("nemesis.steps.%d", i)
	var set []string
	if st.Fault != "" {
		set = append(set, "fault")
	}
	if st.Heal != "" {
		set = append(set, "heal")
	}
	if st.Sleep > 0 {
		set = append(set, "sleep")
	}
	if st.Await != "" {
		set = append(set, "await")
	}
	if st.Quiesce {
		set = append(set, "quiesce")
	}
	if st.Resume {
		set = append(set, "resume")
	}
	if len(set) != 1 {
		return s.ErrAt(path, "a step needs exactly one of fault, heal, sleep, await, quiesce, resume; got %v", set)
	}
	if st.By != "" && st.Await == "" {
		return s.ErrAt(path+".by", "by goes with await only")
	}
	if st.Fault == "" && (st.Target != "" || st.For > 0 || len(st.Params) > 0) {
		return s.ErrAt(path, "target, for and params go with fault only")
	}
	if st.Await != "" {
		switch st.Await {
		case "grant", "read", "write":
		case "in-sync":
			if s.Topology.Kind != "replicated" {
				return s.ErrAt(path+".await", "in-sync needs a replicated topology, not %s", s.Topology.Kind)
			}
			if st.By != "" {
				return s.ErrAt(path+".by", "in-sync waits for the replicas, not for a client")
			}
		default:
			return s.ErrAt(path+".await", "%q is not allowed (allowed: grant, read, write, in-sync)", st.Await)
		}
		if st.Within == 0 {
			st.Within = Duration(30 * time.Second)
		}
	}
	return nil
}

// ErrAt formats an error naming the file, the line of a field (given as a
// dotted path such as "lock.name" or "nemesis.steps.2.fault") and the field.
func (s *Scenario) ErrAt(path, format string, args ...any) error {
	return s.errAt(path, format, args...)
}

// Schedule lists the steps of one cycle as text.
func (s *Scenario) Schedule() []string {
	var out []string
	for _, st := range s.Nemesis.Steps {
		out = append(out, st.String())
	}
	return out
}
