package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// validateNemesis checks the fault schedule: the cycles, the steps of a
// cycle or the random schedule, every fault with its params, and the whole
// run's scheduled length.
func (s *Scenario) validateNemesis() error {
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
		if err := s.validateRandom(r); err != nil {
			return err
		}
	}
	if d := s.ScheduledTime(); d > MaxRunTime {
		return s.ErrAt("nemesis.cycles", "%d cycles of this schedule take up to %v (allowed: at most %v in all)", n.Cycles, d.Round(time.Second), MaxRunTime)
	}
	return nil
}

func (s *Scenario) validateRandom(r *Random) error {
	if len(r.Faults) == 0 {
		return s.ErrAt("nemesis.random.faults", "list the faults to choose from")
	}
	for _, l := range []struct {
		name  string
		items []string
	}{{"faults", r.Faults}, {"targets", r.Targets}} {
		if len(l.items) > MaxListLen {
			return s.ErrAt("nemesis.random."+l.name, "%d %s (allowed: 1 to %d)", len(l.items), l.name, MaxListLen)
		}
		for i, v := range l.items {
			if err := s.checkText(fmt.Sprintf("nemesis.random.%s.%d", l.name, i), v, MaxNameLen); err != nil {
				return err
			}
		}
	}
	for i, f := range r.Faults {
		if cat := faultRegistry(); cat == nil {
			continue
		} else if err := cat.Check(f, nil); err != nil {
			return s.ErrAt(fmt.Sprintf("nemesis.random.faults.%d", i), "%v", err)
		}
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
	return nil
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
	for _, f := range []struct{ name, value string }{{"fault", st.Fault}, {"target", st.Target}, {"heal", st.Heal}, {"await", st.Await}, {"by", st.By}} {
		if err := s.checkText(path+"."+f.name, f.value, MaxNameLen); err != nil {
			return err
		}
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
	if st.Fault != "" {
		if err := s.validateFault(path, st); err != nil {
			return err
		}
	}
	if st.Heal != "" && st.Heal != "all" {
		if err := s.validateHeal(i); err != nil {
			return err
		}
	}
	if st.Await != "" {
		return s.validateAwait(path, st)
	}
	return nil
}

// validateHeal checks that step i heals a fault injected by an earlier
// step of the cycle that is still active (no `for`): anything else heals
// nothing.
func (s *Scenario) validateHeal(i int) error {
	st := &s.Nemesis.Steps[i]
	var open []string
	for _, p := range s.Nemesis.Steps[:i] {
		if p.Fault != "" && p.For == 0 {
			open = append(open, p.Fault)
		}
		if p.Heal == "all" {
			open = nil
		}
	}
	if !slices.Contains(open, st.Heal) {
		return s.ErrAt(fmt.Sprintf("nemesis.steps.%d.heal", i), "%q heals nothing: no earlier step of this cycle injects it without `for` (allowed: all%s)", st.Heal, prefixEach(", ", open))
	}
	return nil
}

// validateAwait checks an await step's event against the topology, and
// gives it the default within (30 s).
func (s *Scenario) validateAwait(path string, st *Step) error {
	switch st.Await {
	case "grant", "read", "write", "renew", AwaitCommand:
	case "in-sync":
		if s.Topology.Kind != "replicated" && s.Topology.Kind != "cluster" {
			return s.ErrAt(path+".await", "in-sync needs a replicated or cluster topology, not %s", s.Topology.Kind)
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
	return nil
}

// validateFault checks a fault step's fault and params against the faults
// registry: a known fault, params it knows within their ranges (durations
// within MaxDuration), a clients param naming a client of the workload.
// (Its target is checked by the runner, which knows the topology's names.)
func (s *Scenario) validateFault(path string, st *Step) error {
	cat := faultRegistry()
	if cat == nil {
		return nil
	}
	if err := cat.Known(st.Fault); err != nil {
		return s.ErrAt(path+".fault", "%v", err)
	}
	keys := make([]string, 0, len(st.Params))
	for k := range st.Params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := s.checkText(path+".params", k, MaxNameLen); err != nil {
			return err
		}
		if err := s.checkText(path+".params."+k, st.Params[k], MaxValueLen); err != nil {
			return err
		}
	}
	if err := cat.Check(st.Fault, st.Params); err != nil {
		return s.ErrAt(path+".params", "%v", err)
	}
	if param, c := cat.ClientParam(st.Params); c > s.Workload.Clients {
		return s.ErrAt(path+".params", "param %s: %q is not a client of this workload (allowed: c1 to c%d, holder, others, all)",
			param, st.Params[param], s.Workload.Clients)
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
