package scenarios

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/checker"
)

// Bounds on every count and duration of a scenario (and of the command
// line's overrides): a value outside them is refused before anything starts,
// with the bound in the message.
const (
	MaxClients = 64
	// Topology sizes are bounded so that an interrupted start-up, with
	// everything removed, fits in 2 s on a loaded 2-core host with Docker.
	MaxReplicas  = 2
	MaxSentinels = 3
	MaxMasters   = 7
	MaxCycles    = 1000
	MaxSteps     = 100 // steps of one cycle
	MaxPerCycle  = 20  // faults per cycle of a random nemesis
	MaxReentry   = 16
	// MaxDuration bounds every single duration (ttl, wait, hold, think,
	// sleep, for, within, warmup, cooldown, interval, stuck_after, ...).
	MaxDuration = 10 * time.Minute
	// maxStartSpread bounds how long after c1 the last client starts.
	maxStartSpread = time.Minute
	// MaxRunTime bounds the scheduled length of a whole run: warmup plus
	// every cycle's sleeps, fault durations, await timeouts and cooldown.
	MaxRunTime = 24 * time.Hour
	// MaxFileSize bounds a scenario file.
	MaxFileSize = 1 << 20
	// MaxPasswordLen bounds topology.password.
	MaxPasswordLen = 128
)

// Validate checks the scenario's structure and bounds and fills defaults.
// Names of locks and faults are checked by the runner against their
// registries (through ErrAt), since this package does not know them.
func (s *Scenario) Validate() error {
	if s.Name == "" {
		return s.ErrAt("name", "missing; give the scenario a name")
	}
	if strings.ContainsAny(s.Name, "/\\ \t\n") || s.Name == "." || s.Name == ".." {
		return s.ErrAt("name", "%q: must be one word without slashes (it names the report folder)", s.Name)
	}
	if err := s.validateTopology(); err != nil {
		return err
	}
	if s.Lock.Name == "" {
		return s.ErrAt("lock.name", "missing; name a lock (see `simulate list`)")
	}
	if s.Lock.TTL.D() < time.Millisecond {
		return s.ErrAt("lock.ttl", "missing or below 1ms; the lease time, e.g. 2s (allowed: 1ms to %v)", MaxDuration)
	}
	if s.Lock.Wait == 0 {
		s.Lock.Wait = s.Lock.TTL
	}
	w := &s.Workload
	if w.Clients == 0 && s.lineOf("workload.clients") == 0 {
		return s.ErrAt("workload.clients", "missing; how many clients contend (allowed: 1 to %d)", MaxClients)
	}
	if w.Clients < 1 || w.Clients > MaxClients {
		return s.ErrAt("workload.clients", "want 1 to %d clients, got %d", MaxClients, w.Clients)
	}
	if w.Resource == "" {
		w.Resource = "order"
	}
	if strings.ContainsAny(w.Resource, " \t\n") {
		return s.ErrAt("workload.resource", "must not contain white space")
	}
	if w.Reentry < 0 || w.Reentry > MaxReentry {
		return s.ErrAt("workload.reentry", "want 0 to %d acquires per round, got %d", MaxReentry, w.Reentry)
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
		if w.Reentry > 1 || w.Extends > 0 || w.ReleaseOld || w.HoldUntilValid > 0 || w.WriteIfValid > 0 {
			return s.ErrAt("workload.round", "worker runs plain rounds only (no reentry, extends, release_old, hold_until_valid, write_if_valid)")
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
	if w.Clients > 1 && time.Duration(w.Clients-1)*w.StartApart.D() > maxStartSpread {
		return s.ErrAt("workload.start_apart", "the last client would start %v after the first (allowed: (clients-1) × start_apart at most %v)",
			time.Duration(w.Clients-1)*w.StartApart.D(), maxStartSpread)
	}
	if w.HoldUntilValid.D() < 0 || w.HoldUntilValid.D() > time.Hour {
		return s.ErrAt("workload.hold_until_valid", "want 0 (off) to 1h, got %v", w.HoldUntilValid.D())
	}
	if w.WriteIfValid.D() < 0 || w.WriteIfValid.D() > time.Hour {
		return s.ErrAt("workload.write_if_valid", "want 0 (off) to 1h, got %v", w.WriteIfValid.D())
	}
	n := &s.Nemesis
	if n.Cycles < 0 || n.Cycles > MaxCycles {
		return s.ErrAt("nemesis.cycles", "want 1 to %d, got %d", MaxCycles, n.Cycles)
	}
	if n.Cycles == 0 {
		n.Cycles = 1
	}
	if n.Random != nil && len(n.Steps) > 0 {
		return s.ErrAt("nemesis.random", "give either steps or random, not both")
	}
	if n.Random == nil && len(n.Steps) == 0 {
		if s.lineOf("nemesis.steps") > 0 {
			return s.ErrAt("nemesis.steps", "an empty list (allowed: 1 to %d steps, e.g. `- {sleep: 3s}` for a run without faults)", MaxSteps)
		}
		return s.ErrAt("nemesis", "no steps and no random schedule (allowed: steps with 1 to %d steps, or random)", MaxSteps)
	}
	if len(n.Steps) > MaxSteps {
		return s.ErrAt("nemesis.steps", "%d steps in a cycle (allowed: 1 to %d)", len(n.Steps), MaxSteps)
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
			return s.ErrAt("nemesis.random.interval", "missing; mean time between faults, e.g. 2s (allowed: 1ms to %v)", MaxDuration)
		}
		if r.For.D() <= 0 {
			return s.ErrAt("nemesis.random.for", "missing; how long each fault lasts, e.g. 1s (allowed: 1ms to %v)", MaxDuration)
		}
		if r.PerCycle < 0 || r.PerCycle > MaxPerCycle {
			return s.ErrAt("nemesis.random.per_cycle", "want 1 to %d faults per cycle (or leave it out for 3), got %d", MaxPerCycle, r.PerCycle)
		}
		if r.PerCycle == 0 {
			r.PerCycle = 3
		}
		if r.Line == 0 {
			r.Line = s.lineOf("nemesis.random")
		}
	}
	if d := s.ScheduledTime(); d > MaxRunTime {
		return s.ErrAt("nemesis.cycles", "%d cycles of this schedule take up to %v (allowed: at most %v in all)", n.Cycles, d.Round(time.Second), MaxRunTime)
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
			var allowed []string
			for _, k := range checker.Classes {
				if k != checker.ClassSafe {
					allowed = append(allowed, k)
				}
			}
			return s.ErrAt(fmt.Sprintf("allow.%d", i), "%q: allow lists extra classes tolerated (allowed: %s)", c, strings.Join(allowed, ", "))
		}
	}
	return nil
}

func (s *Scenario) validateTopology() error {
	t := &s.Topology
	kinds := "standalone, replicated, masters, etcd"
	notHere := func(field string) error {
		return s.ErrAt("topology."+field, "does not apply to a %s topology (allowed for %s: %s)", t.Kind, t.Kind, strings.Join(topologyFields(t.Kind), ", "))
	}
	switch t.Kind {
	case "standalone", "etcd":
	case "replicated":
		if t.Replicas < 1 || t.Replicas > MaxReplicas {
			return s.ErrAt("topology.replicas", "want 1 to %d replicas, got %d", MaxReplicas, t.Replicas)
		}
		if t.Sentinels != 0 && (t.Sentinels < 3 || t.Sentinels%2 == 0 || t.Sentinels > MaxSentinels) {
			return s.ErrAt("topology.sentinels", "want 0 or 3 (an odd number from 3 to %d), got %d", MaxSentinels, t.Sentinels)
		}
	case "masters":
		if t.Masters < 1 || t.Masters > MaxMasters {
			return s.ErrAt("topology.masters", "want 1 to %d independent masters, got %d", MaxMasters, t.Masters)
		}
	case "":
		return s.ErrAt("topology.kind", "missing (allowed: %s)", kinds)
	default:
		return s.ErrAt("topology.kind", "%q is not allowed (allowed: %s)", t.Kind, kinds)
	}
	if t.Kind != "replicated" && t.Replicas != 0 {
		return notHere("replicas")
	}
	if t.Kind != "replicated" && t.Sentinels != 0 {
		return notHere("sentinels")
	}
	if t.Kind != "masters" && t.Masters != 0 {
		return notHere("masters")
	}
	if t.Kind == "etcd" && t.Persistence != "" {
		return notHere("persistence")
	}
	if t.Kind == "etcd" && t.Password != "" {
		return s.ErrAt("topology.password", "etcd nodes run without a password here (allowed for etcd: %s)", strings.Join(topologyFields(t.Kind), ", "))
	}
	switch t.Persistence {
	case "", "none", "aof-always", "aof-everysec":
	default:
		return s.ErrAt("topology.persistence", "%q is not allowed (allowed: none, aof-always, aof-everysec)", t.Persistence)
	}
	if len(t.Password) > MaxPasswordLen {
		return s.ErrAt("topology.password", "%d characters (allowed: 1 to %d)", len(t.Password), MaxPasswordLen)
	}
	for _, c := range t.Password {
		if c <= ' ' || c == '"' || c == '\'' || c == '\\' || c > '~' {
			return s.ErrAt("topology.password", "contains white space, a quote, a backslash or a non-ASCII character (allowed: printable ASCII without those)")
		}
	}
	return nil
}

// topologyFields lists the topology fields that apply to a kind.
func topologyFields(kind lockfault.TopologyKind) []string {
	switch kind {
	case "replicated":
		return []string{"kind", "replicas", "sentinels", "persistence", "password"}
	case "masters":
		return []string{"kind", "masters", "persistence", "password"}
	case "etcd":
		return []string{"kind"}
	}
	return []string{"kind", "persistence", "password"}
}

func (s *Scenario) validateStep(i int) error {
	st := &s.Nemesis.Steps[i]
	path := fmt.Sprintf("nemesis.steps.%d", i)
	if err := s.validateCommand(i); err != nil {
		return err
	}
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
	if st.Within > 0 && st.Await == "" {
		return s.ErrAt(path+".within", "within goes with await only")
	}
	if st.Fault == "" && (st.Target != "" || st.For > 0 || len(st.Params) > 0) {
		return s.ErrAt(path, "target, for and params go with fault only")
	}
	if st.Heal != "" && st.Heal != "all" {
		// A heal names a fault injected by an earlier step of the cycle
		// that is still active (no `for`): anything else heals nothing.
		var open []string
		for _, p := range s.Nemesis.Steps[:i] {
			if p.Fault != "" && p.For == 0 {
				open = append(open, p.Fault)
			}
			if p.Heal == "all" {
				open = nil
			}
		}
		found := false
		for _, f := range open {
			found = found || f == st.Heal
		}
		if !found {
			return s.ErrAt(path+".heal", "%q heals nothing: no earlier step of this cycle injects it without `for` (allowed: all%s)", st.Heal, prefixEach(", ", open))
		}
	}
	if st.Await != "" {
		switch st.Await {
		case "grant", "read", "write", "renew", AwaitCommand:
		case "in-sync":
			if s.Topology.Kind != "replicated" {
				return s.ErrAt(path+".await", "in-sync needs a replicated topology, not %s", s.Topology.Kind)
			}
			if st.By != "" {
				return s.ErrAt(path+".by", "in-sync waits for the replicas, not for a client")
			}
		default:
			return s.ErrAt(path+".await", "%q is not allowed (allowed: grant, read, write, renew, in-sync)", st.Await)
		}
		if st.Within == 0 {
			st.Within = Duration(30 * time.Second)
		}
	}
	return nil
}

func prefixEach(sep string, xs []string) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, x := range xs {
		if !seen[x] {
			b.WriteString(sep + x)
			seen[x] = true
		}
	}
	return b.String()
}

// ScheduledTime is the longest the nemesis can take by its schedule: the
// warmup, then per cycle every sleep, fault duration and await timeout plus
// the cooldown (a random nemesis: per_cycle times 1.5 intervals plus `for`).
func (s *Scenario) ScheduledTime() time.Duration {
	n := s.Nemesis
	var cycle time.Duration
	for _, st := range n.Steps {
		cycle += st.Sleep.D() + st.For.D()
		if st.Await != "" {
			w := st.Within.D()
			if w == 0 {
				w = 30 * time.Second
			}
			cycle += w
		}
	}
	if r := n.Random; r != nil {
		k := r.PerCycle
		if k <= 0 {
			k = 3
		}
		cycle += time.Duration(k) * (r.Interval.D()*3/2 + r.For.D())
	}
	cycle += n.Cooldown.D()
	cycles := n.Cycles
	if cycles < 1 {
		cycles = 1
	}
	return n.Warmup.D() + time.Duration(cycles)*cycle
}

// lineOf is the line of a field path (a variant's own first), 0 if absent.
func (s *Scenario) lineOf(path string) int {
	if l, ok := s.line[s.prefix+path]; ok && s.prefix != "" {
		return l
	}
	return s.line[path]
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
