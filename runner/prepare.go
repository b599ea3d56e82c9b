package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/faults"
	"github.com/lockfault/lockfault/scenarios"
)

// Overrides are the command line's (or the suite's) changes to a scenario.
type Overrides struct {
	// Variant runs this variant of the scenario. Empty: the variant whose
	// lock is the subject's, if there is one, else the base.
	Variant string
	// Cycles overrides the number of fault cycles (0: the scenario's).
	Cycles int
	// Seed overrides a random nemesis's seed (0: the scenario's, else the
	// time).
	Seed int64
	// LockOptions are lock options the run turns on for the subject's lock
	// where it declares them (a property's watchdog lease), over the
	// scenario's and under the subject's own. They need a subject.
	LockOptions map[string]string
}

// Plan is a scenario ready to run against a subject: the overrides applied
// and everything checked. Run takes it as it is.
type Plan struct {
	Scenario *scenarios.Scenario
	// Subject and Options are the lock under test as it runs, from here to
	// the worker's init and ready: the one carrier of the lock. Prepare,
	// the one place where the scenario's lock is a default the subject
	// overrides, sets them, and writes the same lock into the scenario for
	// the record (the scenario written with the run names it).
	Subject Subject
	// Options: the scenario's options for its own lock, under the
	// subject's own options (a safety option turned on).
	Options map[string]string
	// ByLock: no variant was asked for, and the one run was picked because
	// its lock is the subject's.
	ByLock bool
}

// Load reads a built-in scenario by name or a scenario file.
func Load(nameOrPath string) (*scenarios.Scenario, error) { return scenarios.Load(nameOrPath) }

// Prepare is the one place a run's input is checked, before anything
// starts: the scenario's structure and bounds, the command line's
// overrides, the subject (its needs against the topology, the scenario's
// lock options against the options it declares), and every step against
// the registries of faults and targets. subj nil means the scenario's own
// lock. Every error names the file, the line and the field.
func Prepare(ctx context.Context, sc *scenarios.Scenario, subj *Subject, ov Overrides) (*Plan, error) {
	if ov.Cycles < 0 || ov.Cycles > scenarios.MaxCycles {
		return nil, fmt.Errorf("-cycles %d: want 1 to %d", ov.Cycles, scenarios.MaxCycles)
	}
	plan := &Plan{}
	variant := ov.Variant
	// A variant is picked by its lock only when the base runs another lock:
	// a variant that names no lock inherits the base's, and a subject that
	// is already the base's lock runs the base.
	if variant == "" && subj != nil && sc.Lock.Name != subj.Name() {
		for _, v := range sc.VariantNames()[1:] {
			if vs, _ := sc.WithVariant(v); vs != nil && vs.Lock.Name == subj.Name() {
				variant, plan.ByLock = v, true
				break
			}
		}
	}
	sc, err := sc.WithVariant(variant)
	if err != nil {
		return nil, err
	}
	if subj != nil && sc.Lock.Name != subj.Name() {
		// The scenario's lock options belong to the scenario's own lock.
		sc.Lock.Name, sc.Lock.Options = subj.Name(), nil
	}
	if subj == nil && len(ov.LockOptions) > 0 {
		return nil, fmt.Errorf("lock options %v given without a subject to apply them to", sortedKeys(ov.LockOptions))
	}
	if subj != nil {
		// The run's options over the scenario's: those it turns on where
		// the lock declares them, then the subject's own (a safety option
		// on).
		sc.Lock.Options = mergeOptions(sc.Lock.Options, subj.Info.Declared(ov.LockOptions), subj.Options)
	}
	if ov.Cycles > 0 {
		sc.Nemesis.Cycles = ov.Cycles
		if d := sc.ScheduledTime(); d > scenarios.MaxRunTime {
			return nil, fmt.Errorf("-cycles %d: %s's schedule would take up to %v (allowed: at most %v in all)", ov.Cycles, sc.Name, d.Round(time.Second), scenarios.MaxRunTime)
		}
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if subj == nil {
		s, err := BuiltIn(ctx, sc.Lock.Name)
		if err != nil {
			return nil, sc.ErrAt("lock.name", "%v", err)
		}
		subj = &s
	}
	plan.Subject, plan.Options = *subj, sc.Lock.Options
	if err := checkSubject(sc, plan.Subject); err != nil {
		return nil, err
	}
	if err := checkSteps(sc); err != nil {
		return nil, err
	}
	if rn := sc.Nemesis.Random; rn != nil && (ov.Seed != 0 || rn.Seed == 0) {
		// The seed is fixed now, so the scenario written with the run is
		// the schedule as run.
		c := *rn
		c.Seed = ov.Seed
		if c.Seed == 0 {
			c.Seed = time.Now().UnixNano()
		}
		sc.Nemesis.Random = &c
	}
	plan.Scenario = sc
	return plan, nil
}

// mergeOptions is base with each of over's maps copied over it in turn; a
// new map when anything is copied, base itself otherwise.
func mergeOptions(base map[string]string, over ...map[string]string) map[string]string {
	out, cloned := base, false
	for _, o := range over {
		if len(o) == 0 {
			continue
		}
		if !cloned {
			out, cloned = maps.Clone(base), true
			if out == nil {
				out = map[string]string{}
			}
		}
		maps.Copy(out, o)
	}
	return out
}

// checkSubject: the lock fits the topology and understands the options.
func checkSubject(sc *scenarios.Scenario, s Subject) error {
	if !s.Info.Needs.Fits(sc.Topology.Kind) {
		field := "lock.name"
		if s.External() {
			field = "topology.kind"
		}
		return sc.ErrAt(field, "lock %s needs %s, which a %s topology cannot give (allowed for it: %s)", s.Name(), s.Info.Needs, sc.Topology.Kind, topologiesFor(s))
	}
	// A built-in lock always declares its options; an external worker
	// that declares none is not checked here (its init refuses them).
	if len(sc.Lock.Options) > 0 && (!s.External() || len(s.Info.Options) > 0) {
		for _, k := range sortedKeys(sc.Lock.Options) {
			if !slices.Contains(s.Info.Options, k) {
				allowed := strings.Join(s.Info.Options, ", ")
				if allowed == "" {
					allowed = "none"
				}
				return sc.ErrAt("lock.options."+k, "lock %s has no option %q (allowed: %s)", s.Name(), k, allowed)
			}
		}
	}
	return nil
}

// checkSteps checks every step's fault, params and target, and a random
// nemesis's faults with every target it may draw: a schedule fails here, at
// its line, not after the cluster has started.
func checkSteps(sc *scenarios.Scenario) error {
	for i, st := range sc.Nemesis.Steps {
		at := func(field string) string { return fmt.Sprintf("nemesis.steps.%d.%s", i, field) }
		if st.Fault != "" {
			if _, _, err := faults.Get(st.Fault); err != nil {
				return sc.ErrAt(at("fault"), "%v", err)
			}
			if err := faults.Check(st.Fault, st.Params); err != nil {
				return sc.ErrAt(at("params"), "%v", err)
			}
			if err := checkTarget(sc, st.Fault, st.Target); err != nil {
				return sc.ErrAt(at("target"), "%v", err)
			}
		}
		if st.By != "" && !slices.Contains(clientNames(sc), st.By) {
			return sc.ErrAt(at("by"), "%q is not a client (allowed: c1..c%d)", st.By, sc.Workload.Clients)
		}
	}
	r := sc.Nemesis.Random
	if r == nil {
		return nil
	}
	targets := r.Targets
	if len(targets) == 0 {
		targets = []string{""}
	}
	for i, f := range r.Faults {
		if err := faults.Check(f, nil); err != nil {
			return sc.ErrAt(fmt.Sprintf("nemesis.random.faults.%d", i), "%v", err)
		}
		for j, tg := range targets {
			if err := checkTarget(sc, f, tg); err != nil {
				if len(r.Targets) == 0 {
					return sc.ErrAt(fmt.Sprintf("nemesis.random.faults.%d", i), "%v", err)
				}
				return sc.ErrAt(fmt.Sprintf("nemesis.random.targets.%d", j), "%v", err)
			}
		}
	}
	return nil
}

// topologiesFor lists the topology kinds a subject can run on.
func topologiesFor(s Subject) string {
	var out []string
	for _, k := range lockfault.TopologyKinds {
		if s.Info.Needs.Fits(k) {
			out = append(out, string(k))
		}
	}
	return strings.Join(out, ", ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
