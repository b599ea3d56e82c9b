package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/faults"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/report"
	"github.com/lockfault/lockfault/scenarios"
	"github.com/lockfault/lockfault/worker"
)

// errCycleOver ends a cycle's steps early after something recorded as a
// finding (an await that timed out, a fault whose target did not exist).
var errCycleOver = errors.New("cycle over")

// errNoHolder: a step targeted the holder while nobody held the lock.
var errNoHolder = errors.New("target holder: nobody holds the lock now (put `await: grant` before this step)")

// nemesis applies a run's faults: the warmup, every cycle's steps (awaits,
// sleeps, faults and their effect checks, heals), the settling of the
// topology between cycles and the cooldowns; and the stops a worker's
// failpoint asks for.
type nemesis struct {
	r *run
	// awaiting is the event channel of the await step being run.
	awaiting <-chan struct{}
	// afterCommand: the step running follows an await: command (the
	// message that await holds is let go once the step's fault is in).
	afterCommand bool
}

// active is an injected, not yet healed fault.
type active struct {
	name, target string
	heal         faults.Heal
	during       func(context.Context) string // read as it heals (faults.Effect.During)
	later        *laterCheck                  // its effect, judged as it heals (faults.Effect.Later)
}

// laterCheck is a step's effect check that waits for its heal: the step
// (as its pending note named it) and the check.
type laterCheck struct {
	cycle        int
	step, detail string
	check        func(context.Context) faults.Effect
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// RandomSchedule draws every cycle's steps from one seeded generator: the
// same seed gives the same schedule. Each cycle is `faults` rounds of a
// sleep of 0.5 to 1.5 times the interval, then one fault on one target for
// `for`, healed before the next round.
func RandomSchedule(rn *scenarios.Random, seed int64, cycles int) [][]scenarios.Step {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15))
	rounds := rn.PerCycle
	if rounds <= 0 {
		rounds = 3
	}
	out := make([][]scenarios.Step, cycles)
	for c := range out {
		for i := 0; i < rounds; i++ {
			gap := time.Duration(float64(rn.Interval.D()) * (0.5 + rng.Float64()))
			gap = gap.Round(time.Millisecond)
			out[c] = append(out[c], scenarios.Step{Sleep: scenarios.Duration(gap), Line: rn.Line})
			st := scenarios.Step{Fault: rn.Faults[rng.IntN(len(rn.Faults))], For: rn.For, Line: rn.Line}
			if len(rn.Targets) > 0 {
				st.Target = rn.Targets[rng.IntN(len(rn.Targets))]
			}
			out[c] = append(out[c], st)
		}
	}
	return out
}

// nemesis runs the warmup, every cycle's steps, and the cooldowns.
func (nem *nemesis) run(ctx context.Context, meta *report.Meta) error {
	n := nem.r.sc.Nemesis
	if err := sleep(ctx, n.Warmup.D()); err != nil {
		return err
	}
	schedule := make([][]scenarios.Step, n.Cycles)
	for i := range schedule {
		schedule[i] = n.Steps
	}
	if n.Random != nil {
		seed := n.Random.Seed // fixed by Run before the scenario was written
		schedule = RandomSchedule(n.Random, seed, n.Cycles)
		nem.r.note("seed", fmt.Sprint(seed))
		meta.Seed, meta.Schedule = seed, nil
		for c, steps := range schedule {
			for _, st := range steps {
				line := fmt.Sprintf("cycle %d: %s", c+1, st.String())
				nem.r.note("schedule", line)
				meta.Schedule = append(meta.Schedule, line)
			}
		}
		fmt.Fprintf(nem.r.log, "random nemesis seed %d\n", seed)
	}
	for c := 1; c <= n.Cycles; c++ {
		nem.r.setCycle(c)
		nem.r.hist.Append(history.Event{Kind: history.Note, Op: "cycle", Cycle: c, Detail: fmt.Sprintf("cycle %d of %d", c, n.Cycles)})
		fmt.Fprintf(nem.r.log, "cycle %d/%d\n", c, n.Cycles)
		var act []active
		err := nem.runSteps(ctx, schedule[c-1], &act)
		if errors.Is(err, errCycleOver) {
			// Recorded as a finding (unavailable, not-exercised): the
			// rest of this cycle's schedule cannot run, the next can.
			err = nil
		}
		herr := nem.healAll(context.WithoutCancel(ctx), &act)
		nem.r.gate.open()
		if err != nil {
			return fmt.Errorf("cycle %d: %w", c, err)
		}
		if herr != nil {
			return fmt.Errorf("cycle %d: heal: %w", c, herr)
		}
		if err := nem.settle(ctx); err != nil {
			return fmt.Errorf("cycle %d: settle: %w", c, err)
		}
		if err := sleep(ctx, n.Cooldown.D()); err != nil {
			return err
		}
	}
	return nil
}

func (nem *nemesis) runSteps(ctx context.Context, steps []scenarios.Step, act *[]active) error {
	var next <-chan struct{}
	for i, st := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		// An await means "the next such event after the previous step
		// began": register it before that step runs, so an event the step
		// itself triggers at once (resume -> grant) is not missed. After
		// another await it means the next such event after that await's
		// event: `{await: grant}` twice is two successive grants.
		awaiting := next
		next = nil
		if st.Await != "" && awaiting == nil && !polledAwait(st.Await) {
			ch, err := nem.register(st, nil)
			if err != nil {
				return err
			}
			awaiting = ch
		}
		if i+1 < len(steps) && steps[i+1].Await != "" && !polledAwait(steps[i+1].Await) {
			var after <-chan struct{}
			if st.Await != "" && !polledAwait(st.Await) {
				after = awaiting
			}
			ch, err := nem.register(steps[i+1], after)
			if err != nil {
				return err
			}
			next = ch
		}
		nem.awaiting = awaiting
		nem.afterCommand = i > 0 && steps[i-1].Await == scenarios.AwaitCommand
		err := nem.step(ctx, st, act)
		if i > 0 && steps[i-1].Await == scenarios.AwaitCommand {
			nem.r.taps.releaseHeld() // the step after the await has been applied
			nem.r.taps.openGate()    // ... and has ended
		}
		if err != nil {
			return fmt.Errorf("%s:%d: step %q: %w", nem.r.sc.File, st.Line, st.String(), err)
		}
	}
	return nil
}

func (nem *nemesis) step(ctx context.Context, st scenarios.Step, act *[]active) error {
	switch {
	case st.Quiesce:
		return nem.r.qu.quiesce(ctx)
	case st.Resume:
		nem.r.gate.open()
		return nil
	case st.Sleep > 0:
		return sleep(ctx, st.Sleep.D())
	case polledAwait(st.Await):
		return awaitPolled(ctx, nem.r.clus, st.Await, st.Within.D())
	case st.Await == scenarios.AwaitCommand:
		return nem.r.awaitCommand(ctx, st, nem.awaiting, nem.afterCommand)
	case st.Await != "":
		return nem.awaitEvent(ctx, st)
	case st.Heal != "":
		return nem.heal(ctx, st.Heal, act)
	case st.Fault != "":
		return nem.inject(ctx, st, act)
	}
	return fmt.Errorf("empty step")
}

// awaitEvent waits for an await step's workload event (registered before
// the step before it ran) for at most the step's within; nothing within
// it is a finding about the lock (unavailable) that ends the cycle.
func (nem *nemesis) awaitEvent(ctx context.Context, st scenarios.Step) error {
	select {
	case <-nem.awaiting:
		return nil
	case <-time.After(st.Within.D()):
		// Nothing happened for the whole wait: a result about the
		// lock (it refused to grant while the fault lasted), not a
		// harness failure.
		who := ""
		if st.By != "" {
			who = " by " + st.By
		}
		nem.r.hist.Append(history.Event{Kind: history.Note, Op: checker.NoteUnavailable, Cycle: nem.r.currentCycle(),
			DurationMs: st.Within.D().Milliseconds(),
			Detail:     fmt.Sprintf("no %s%s within %v (%s:%d, %s); the rest of the cycle was skipped", st.Await, who, st.Within.D(), nem.r.sc.File, st.Line, st.String())})
		fmt.Fprintf(nem.r.log, "cycle %d: no %s%s within %v: unavailable\n", nem.r.currentCycle(), st.Await, who, st.Within.D())
		return errCycleOver
	case <-ctx.Done():
		return ctx.Err()
	}
}

// inject applies a fault step: it resolves the target (the trigger's
// client, the holder pinned now), starts the effect check, injects, and
// keeps the heal among the active faults, healing after the step's for.
// A target that did not exist is a finding (not exercised) that ends the
// cycle.
func (nem *nemesis) inject(ctx context.Context, st scenarios.Step, act *[]active) error {
	f, _, err := faults.Get(st.Fault)
	if err != nil {
		return err
	}
	target := st.Target
	if target == lockfault.TargetTrigger {
		// The history names the client whose command fired.
		target = nem.r.taps.trigger()
	}
	target, params := nem.pinHolder(st.Fault, target, st.Params)
	check := faults.Prove(ctx, st.Fault, env{nem.r}, target, faults.Params(params))
	e := nem.r.hist.Append(history.Event{Kind: history.FaultStart, Fault: st.Fault, Target: target, Cycle: nem.r.currentCycle(), Detail: st.String()})
	h, err := f.Inject(ctx, env{nem.r}, target, faults.Params(params))
	if err != nil {
		nem.r.hist.Append(history.Event{Kind: history.FaultEnd, Fault: st.Fault, Target: target, Cycle: e.Cycle, Error: err.Error()})
		if errors.Is(err, errNoHolder) || errors.Is(err, faults.ErrClientGone) || errors.Is(err, faults.ErrNotReachable) {
			// The target did not exist when the step ran (nobody held
			// the lock, or every client it names had crashed and was
			// not back yet), or the fault cannot act on it (a node
			// clock fault on an etcd node): the fault attacked
			// nothing. A finding, not a harness failure.
			nem.r.hist.Append(history.Event{Kind: history.Note, Op: checker.NoteNotExercised, Fault: st.Fault, Target: target, Cycle: e.Cycle,
				Detail: fmt.Sprintf("%s:%d: %s: %v; the rest of the cycle was skipped", nem.r.sc.File, st.Line, st.String(), err)})
			return errCycleOver
		}
		return err
	}
	checked := time.Now()
	if h == nil {
		nem.recordEffect(ctx, st, target, e.Cycle, check, false)
		nem.r.hist.Append(history.Event{Kind: history.FaultEnd, Fault: st.Fault, Target: target, Cycle: e.Cycle})
		return nil
	}
	if nem.afterCommand {
		// The await: command just before holds a message until now.
		// (Not otherwise: the trigger of an await: command right
		// after this step is armed already, and would be disarmed.)
		nem.r.taps.releaseHeld()
	}
	*act = append(*act, active{name: st.Fault, target: target, heal: h})
	// After the release: the check's own time (a drift measured over
	// a window) must not lengthen a hold.
	a := &(*act)[len(*act)-1]
	a.during, a.later = nem.recordEffect(ctx, st, target, e.Cycle, check, true)
	if st.For > 0 {
		// The check's own time counts towards the fault's duration.
		if err := sleep(ctx, st.For.D()-time.Since(checked)); err != nil {
			return err
		}
		return nem.heal(ctx, st.Fault, act)
	}
	return nil
}

// recordEffect runs a step's effect check (if its fault has one) and notes
// what it saw in the history at the step: checker.NoteEffect when the fault
// took effect, checker.NoteNoEffect when it did not (its cycle then proves
// nothing), checker.NoteEffectUnchecked when the backend cannot show it,
// and checker.NoteEffectPending when the check judges again at the heal
// (faults.Effect.Later; only for a step that will be healed: one that will
// not is judged at once). It returns what the heal reads of the fault's
// doing (faults.Effect.During) and the check left for the heal, if any.
func (nem *nemesis) recordEffect(ctx context.Context, st scenarios.Step, target string, cycle int, check func(context.Context) faults.Effect, willHeal bool) (func(context.Context) string, *laterCheck) {
	if check == nil {
		return nil, nil
	}
	eff := check(ctx)
	var later *laterCheck
	if !eff.Seen && !eff.Unchecked && eff.Later != nil {
		if !willHeal {
			eff = eff.Later(ctx)
		} else {
			later = &laterCheck{cycle: cycle, step: st.String(), detail: fmt.Sprintf("%s:%d: %s", nem.r.sc.File, st.Line, st.String()), check: eff.Later}
		}
	}
	op := checker.NoteEffect
	switch {
	case later != nil:
		op = checker.NoteEffectPending
	case eff.Seen:
	case eff.Unchecked:
		op = checker.NoteEffectUnchecked
	default:
		op = checker.NoteNoEffect
	}
	nem.r.hist.Append(history.Event{Kind: history.Note, Op: op, Fault: st.Fault, Target: target, Cycle: cycle,
		Detail: fmt.Sprintf("%s:%d: %s: %s", nem.r.sc.File, st.Line, st.String(), eff.What)})
	if op == checker.NoteNoEffect {
		fmt.Fprintf(nem.r.log, "cycle %d: %s had no effect: %s\n", cycle, st.String(), eff.What)
	}
	return eff.During, later
}

// judgeLater runs a pending effect check as its fault heals (before the
// heal) and notes the verdict: checker.NoteEffectAtHeal, or
// checker.NoteNoEffect (its cycle then proves nothing).
func (nem *nemesis) judgeLater(ctx context.Context, a active) {
	eff := a.later.check(ctx)
	op := checker.NoteEffectAtHeal
	if !eff.Seen {
		op = checker.NoteNoEffect
		fmt.Fprintf(nem.r.log, "cycle %d: %s had no effect: %s\n", a.later.cycle, a.later.step, eff.What)
	}
	nem.r.hist.Append(history.Event{Kind: history.Note, Op: op, Fault: a.name, Target: a.target, Cycle: a.later.cycle,
		Detail: a.later.detail + ": at its heal: " + eff.What})
}

// heal heals the named active faults (or "all"), newest first.
func (nem *nemesis) heal(ctx context.Context, name string, act *[]active) error {
	var keep []active
	var first error
	for i := len(*act) - 1; i >= 0; i-- {
		a := (*act)[i]
		if name != "all" && a.name != name {
			keep = append([]active{a}, keep...)
			continue
		}
		if a.later != nil {
			nem.judgeLater(ctx, a)
		}
		if a.during != nil {
			nem.r.hist.Append(history.Event{Kind: history.Note, Op: checker.NoteEffectDuring, Fault: a.name, Target: a.target, Cycle: nem.r.currentCycle(), Detail: a.during(ctx)})
		}
		err := a.heal(ctx)
		ev := history.Event{Kind: history.FaultEnd, Fault: a.name, Target: a.target, Cycle: nem.r.currentCycle()}
		if err != nil {
			ev.Error = err.Error()
			if first == nil {
				first = fmt.Errorf("heal %s: %w", a.name, err)
			}
		}
		nem.r.hist.Append(ev)
	}
	*act = keep
	return first
}

func (nem *nemesis) healAll(ctx context.Context, act *[]active) error {
	nem.r.taps.releaseAll()
	return nem.heal(ctx, "all", act)
}

// register starts waiting for an await step's event: a workload event, or
// for await: command the trigger it arms (which must not wait for an
// earlier await's event: it counts from now).
func (nem *nemesis) register(st scenarios.Step, after <-chan struct{}) (<-chan struct{}, error) {
	if st.Await == scenarios.AwaitCommand {
		ch, err := nem.r.armCommand(st)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: step %q: %w", nem.r.sc.File, st.Line, st.String(), err)
		}
		return ch, nil
	}
	return nem.r.events.await(st.Await, st.By, after), nil
}

// settle waits for the topology to be whole again between cycles.
func (nem *nemesis) settle(ctx context.Context) error {
	c := nem.r.clus
	if err := c.Net.Heal(); err != nil {
		return err
	}
	for _, m := range c.DataNodes() {
		if !m.Node.Running() {
			if err := c.Restart(ctx, m); err != nil {
				return err
			}
		}
	}
	if c.Topology.Kind == lockfault.Cluster {
		// A failover's old master rejoins as a replica: wait for the
		// cluster to settle and take the roles (key-master) from it.
		if err := c.WaitClusterOK(ctx, 60*time.Second); err != nil {
			return err
		}
		return c.RefreshClusterRoles(ctx)
	}
	if c.Topology.Kind == lockfault.Replicated {
		// Under load (a 2-core machine running several topologies) the
		// Sentinels can take well over 20 s to finish a failover's
		// reconfiguration; waiting longer costs nothing when they are quick.
		if err := nem.followSentinels(ctx, 60*time.Second); err != nil {
			return err
		}
		return c.WaitReplicasSynced(ctx, 30*time.Second)
	}
	return nil
}

// followSentinels makes the harness's primary the one the Sentinels agree
// on: they may have promoted a replica on their own while a cycle was cut
// short (an await that timed out skips the failover step that would have
// followed them). It waits until they have settled (cluster.SentinelSettled:
// one master, one config epoch, nothing down, no failover under way, the
// node a master), re-points the clients and rejoins the replicas if the
// primary moved, then waits until every Sentinel knows every replica, up,
// at its peer proxy: the next cycle's faults start from a stable state.
func (nem *nemesis) followSentinels(ctx context.Context, within time.Duration) error {
	c := nem.r.clus
	if len(c.WithRole(cluster.RoleSentinel)) == 0 {
		return nil
	}
	deadline := time.Now().Add(within)
	wait := func(what string, f func() string) error {
		for {
			why := f()
			if why == "" {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s after %v: %s", what, within, why)
			}
			if err := sleep(ctx, 50*time.Millisecond); err != nil {
				return err
			}
		}
	}
	var m *cluster.Member
	err := wait("the Sentinels have not settled on a primary", func() string {
		var why string
		m, why = c.SentinelSettled(ctx)
		return why
	})
	if err != nil {
		return err
	}
	if m != c.Primary() {
		c.SetPrimary(m)
		nem.r.note("nemesis", fmt.Sprintf("the Sentinels promoted %s on their own; clients re-pointed", m.Name))
		if err := (env{nem.r}).Repoint(ctx); err != nil {
			return err
		}
		if err := c.Rejoin(ctx); err != nil {
			return err
		}
	}
	return wait("the Sentinels do not know the replicas", func() string { return c.SentinelReplicasSettled(ctx) })
}

// failpointStop: a worker stopped itself at a failpoint; resume it later.
func (nem *nemesis) failpointStop(p *proc, m worker.Message) {
	nem.r.hist.Append(history.Event{Kind: history.FaultStart, Fault: "failpoint-stop", Target: p.name, Detail: m.Name, Cycle: nem.r.currentCycle()})
	go func() {
		defer func() { recover() }() // the history may be closed if the run ended meanwhile
		time.Sleep(time.Duration(m.Ms) * time.Millisecond)
		p.Signal(syscall.SIGCONT)
		nem.r.hist.Append(history.Event{Kind: history.FaultEnd, Fault: "failpoint-stop", Target: p.name, Cycle: nem.r.currentCycle()})
	}()
}

// pinHolder resolves a fault step's "holder" (its target, or its clients
// param) once, as the step begins: the client that holds the lock now, the
// one the await before the step saw granted. The step's effect check and
// its injection then act on that client. Resolved twice, the check's own
// time (it reads the namespace's socket tables, tens of milliseconds on a
// busy machine) let a short hold end between the two, and the injection
// found nobody holding (redsync × liveness/holder-partition came out not
// exercised in make cards). With nobody holding, the step is left as it is
// and its injection says so (not exercised). A clone holding is the target
// of a client fault itself, and stands for its client's links in a clients
// param (it has no links of its own: clients=c1-clone was refused, and the
// hunt's step came out inconclusive).
func (nem *nemesis) pinHolder(fault, target string, params map[string]string) (string, map[string]string) {
	_, info, err := faults.Get(fault)
	if err != nil {
		return target, params
	}
	if info.Targets == faults.TargetsClient && target == lockfault.TargetHolder {
		if name, ok := nem.holderNow(); ok {
			target = name
		}
	}
	if params[faults.ParamClients] == lockfault.TargetHolder {
		if name, ok := nem.holderNow(); ok {
			params = maps.Clone(params)
			// A clone (clone-client) holding the lock goes over the links of
			// the client it clones: the links a clients param names.
			params[faults.ParamClients] = nem.r.cl.identity(name)
		}
	}
	return target, params
}

// holderNow is the client that holds the lock now, if any.
func (nem *nemesis) holderNow() (string, bool) {
	nem.r.mu.Lock()
	defer nem.r.mu.Unlock()
	return nem.r.holder, nem.r.holder != ""
}
