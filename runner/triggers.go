package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/resp"
	"github.com/lockfault/lockfault/scenarios"
)

// Command-level triggers: every client's path to every node passes a RESP
// tap (package resp) in front of its toxiproxy proxy, when the scenario
// waits for a command (await: command) or the caller asks to see the
// commands (Options.SeeCommands, the hunt). An await: command arms a
// trigger; when a client's command matches, the history notes what fired
// and the step after the await runs on the client that sent it (target
// trigger):
//
//   - at: request, the command is held before it reaches the node until
//     that step's fault is injected;
//   - at: reply, the node's reply is held before it reaches the client
//     until that step's fault is injected (a client paused there resumes
//     with its call still waiting for the reply: its own read timeout may
//     then end the call);
//   - at: after-reply, the node's reply goes to the client at once (so a paused
//     client has read it, as a process stopped right after a call returned
//     would have), and from then until that step has ended (its `for` ran
//     out, or it was healed) every further command of that client is held
//     at the taps: a client paused or killed right after the reply sends
//     nothing to a node until the fault is over, and a command it sent
//     just before it was killed never arrives.

// NoteCommandFired is the history note of a command that fired an await.
const NoteCommandFired = "command-fired"

// taps are a run's taps and their trigger registry.
type taps struct {
	reg *resp.Registry

	mu   sync.Mutex
	taps map[string]*resp.Tap         // "client>node"
	op   map[string]map[string]string // each client's operations in flight, by process (a clone shares its client's taps)

	// The awaits of await: command steps armed this cycle, each with the
	// message it holds and the gate it closes: awaits are armed before the
	// step before them runs, so two awaits around one fault are armed at
	// once and each keeps its own (one slot for both let the second's arming
	// take the first's place: its held message went only at its hold limit,
	// and the first's release disarmed the second).
	armed   []*await
	awaited []*await // those fired and waited for by their step, not yet released, in order
	just    *await   // the await whose step ran right after another await's (its own release comes later)
	last    *await   // the await last waited for: its client is the target trigger
	opened  []*await // released, their gates still closed until the step after them has ended
}

// await is one await: command's trigger: fired closes when it fired;
// release lets the held message go (once the next step is applied); gate
// holds the trigger client's commands after a reply until the step after
// the await has ended (closeGate).
type await struct {
	fired    chan struct{}
	release  chan struct{}
	relOnce  sync.Once
	armed    *resp.Armed
	fire     resp.Fire // guarded by taps.mu
	gate     *resp.Armed
	gateOpen chan struct{}
	endGate  func() // records the end of the gate's hold

	endMu   sync.Mutex
	endHeld func() // records the end of the held message's hold (once)
}

// heldEnded records the end of the held message's hold, once: when it is
// let go (synchronously, so the window ends before the step that let it go
// returns) or when its hold limit ran out.
func (aw *await) heldEnded() {
	aw.endMu.Lock()
	end := aw.endHeld
	aw.endHeld = nil
	aw.endMu.Unlock()
	if end != nil {
		end()
	}
}

func newTaps() *taps {
	t := &taps{reg: resp.NewRegistry(), taps: map[string]*resp.Tap{}, op: map[string]map[string]string{}}
	t.reg.SetOpSource(t.opOf)
	return t
}

// usesTaps: the scenario waits for a command, or the caller wants to see
// the commands the lock sends.
func (r *run) usesTaps() bool {
	return r.opt.SeeCommands || hasCommandAwait(r.sc)
}

// addr is the address a client reaches a node at: its tap in front of the
// proxy at upstream.
func (t *taps) addr(client, node, upstream string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := tapKey(client, node)
	if tp, ok := t.taps[key]; ok {
		return tp.Addr(), nil
	}
	tp, err := resp.Listen(t.reg, client, node, upstream)
	if err != nil {
		return "", fmt.Errorf("tap %s: %w", key, err)
	}
	t.taps[key] = tp
	return tp.Addr(), nil
}

// tapKey names the tap of a client's path to a node: "client>node".
func tapKey(client, node string) string { return client + ">" + node }

// setOp records the operation process proc, which reaches the nodes as
// client, has in flight ("" when none).
func (t *taps) setOp(client, proc, op string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.op[client] == nil {
		t.op[client] = map[string]string{}
	}
	t.op[client][proc] = op
}

// opOf is the operation a command of client belongs to: the one its
// processes have in flight, or "" when none has one or when a clone and
// its original have different ones (the command could be either's: a
// clone's release is not its original's acquire).
func (t *taps) opOf(client string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	op := ""
	for _, o := range t.op[client] {
		switch {
		case o == "" || o == op:
		case op == "":
			op = o
		default:
			return ""
		}
	}
	return op
}

// close closes every tap (every held message is let go first).
func (t *taps) close() {
	t.releaseAll()
	t.mu.Lock()
	tps := t.taps
	t.taps = map[string]*resp.Tap{}
	t.mu.Unlock()
	// Outside the lock: a tap's Close waits for its connections, and a
	// message on one asks opOf (under the lock) for its operation. Closed
	// under the lock, a hunt's run never ended (and left its cluster's six
	// nodes running) after an interrupt.
	for _, tp := range tps {
		tp.Close()
	}
}

// arm arms the trigger of an await: command step and returns the channel
// closed when it fires. What it holds is recorded as a fault window
// (history.FaultCommandHold on the client whose command fired): a request
// or reply held until the step after the await is applied, or (at:
// after-reply) the client's further commands held until that step has
// ended.
func (r *run) armCommand(st scenarios.Step) (<-chan struct{}, error) {
	t := r.taps
	m := st.Command
	afterReply := m.At == scenarios.AtAfterReply
	at := resp.AtRequest
	if m.At == scenarios.AtReply || afterReply {
		at = resp.AtReply
	}
	reply, err := resp.ParseReplyFilter(m.Reply)
	if err != nil {
		return nil, err
	}
	aw := &await{fired: make(chan struct{}), release: make(chan struct{})}
	trig := resp.Trigger{Client: st.By, Names: m.Names(), Key: m.Key, Script: m.Script, SHA: m.SHA, Op: m.Op, Node: m.Node,
		Nth: m.Nth, At: at, Reply: reply, HoldLimit: commandHoldLimit(st), Pred: writes(m.Write),
		OnFire: func(ctx context.Context, f resp.Fire) {
			t.mu.Lock()
			aw.fire = f
			t.mu.Unlock()
			r.hist.Append(history.Event{Kind: history.Note, Op: NoteCommandFired, Process: f.Client, Target: f.Node, Cycle: r.currentCycle(),
				Detail: describeFire(f)})
			if afterReply {
				r.closeGate(aw, f) // before the client gets the reply
				close(aw.fired)
				return // the reply goes on at once
			}
			what := "request"
			if f.Phase == resp.AtReply {
				what = "reply"
			}
			r.hist.Append(history.Event{Kind: history.FaultStart, Fault: history.FaultCommandHold, Target: f.Client, Cycle: r.currentCycle(),
				Detail: fmt.Sprintf("the %s of %s held at the tap until the step after the await is applied (%s:%d)", what, describeFire(f), r.sc.File, st.Line)})
			aw.endMu.Lock()
			aw.endHeld = func() {
				r.hist.Append(history.Event{Kind: history.FaultEnd, Fault: history.FaultCommandHold, Target: f.Client, Cycle: r.currentCycle()})
			}
			aw.endMu.Unlock()
			close(aw.fired)
			select {
			case <-aw.release:
			case <-ctx.Done():
			}
			aw.heldEnded()
		}}
	a, err := t.reg.Arm(trig)
	if err != nil {
		return nil, err
	}
	aw.armed = a
	t.mu.Lock()
	t.armed = append(t.armed, aw)
	t.mu.Unlock()
	return aw.fired, nil
}

// writes is the predicate of a match that wants writes only (nil: any).
func writes(only bool) func(string, *resp.Command) bool {
	if !only {
		return nil
	}
	return func(_ string, c *resp.Command) bool { return c.Write }
}

// commandHoldLimit bounds how long a matched message is held: the await's
// own wait for it plus the longest the next step may take to be applied.
func commandHoldLimit(st scenarios.Step) time.Duration {
	return min(resp.MaxHoldLimit, max(resp.DefaultHoldLimit, st.Within.D()+time.Minute))
}

// awaited records that the step of the await whose trigger closes fired
// has seen it fire. afterAwait: that step follows another await: command,
// whose release comes right after this step (and must not be this one's).
func (t *taps) awaitedNow(fired <-chan struct{}, afterAwait bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, aw := range t.armed {
		if aw.fired == fired {
			t.awaited = append(t.awaited, aw)
			t.last = aw
			if afterAwait {
				t.just = aw
			}
			return
		}
	}
}

// releaseHeld lets go the messages held by the awaits before the step
// being run (every await waited for and not yet released, but the one
// whose own step this is), and disarms those that never fired. Awaits
// armed for steps still to come are left alone.
func (t *taps) releaseHeld() {
	if t == nil {
		return
	}
	t.mu.Lock()
	var rel, keep []*await
	for _, aw := range t.awaited {
		if aw == t.just {
			keep = append(keep, aw)
			continue
		}
		rel = append(rel, aw)
	}
	t.awaited, t.just = keep, nil
	t.armed = slices.DeleteFunc(t.armed, func(aw *await) bool { return slices.Contains(rel, aw) })
	t.opened = append(t.opened, rel...)
	t.mu.Unlock()
	for _, aw := range rel {
		aw.let()
	}
}

// let disarms an await's trigger (if it never fired) and lets its held
// message go.
func (aw *await) let() {
	aw.armed.Disarm()
	aw.relOnce.Do(func() { close(aw.release) })
	aw.heldEnded()
}

// releaseAll lets every held message go, disarms every trigger armed and
// opens every gate (the cycle is over, or the run).
func (t *taps) releaseAll() {
	if t == nil {
		return
	}
	t.mu.Lock()
	all := t.armed
	t.opened = append(t.opened, all...)
	t.armed, t.awaited, t.just = nil, nil, nil
	t.mu.Unlock()
	for _, aw := range all {
		aw.let()
	}
	t.openGate()
}

// closeGate holds every further command of the client whose command fired
// aw until its gate opens (openGate); a command held when the client has
// died is dropped. The hold is recorded as a fault window on that client.
func (r *run) closeGate(aw *await, f resp.Fire) {
	t := r.taps
	client := f.Client
	open := make(chan struct{})
	g, err := t.reg.Arm(resp.Trigger{Client: client, At: resp.AtRequest, Every: true, HoldLimit: resp.MaxHoldLimit,
		OnFire: func(ctx context.Context, f resp.Fire) {
			select {
			case <-open:
			case <-ctx.Done():
			}
		},
		Drop: func() bool { return r.dead(client) }})
	if err != nil {
		r.note("tap", "cannot hold "+client+"'s commands: "+err.Error())
		return
	}
	r.hist.Append(history.Event{Kind: history.FaultStart, Fault: history.FaultCommandHold, Target: client, Cycle: r.currentCycle(),
		Detail: fmt.Sprintf("every further command of %s held at the taps after the reply of %s, until the step after the await has ended", client, describeFire(f))})
	t.mu.Lock()
	aw.gate, aw.gateOpen = g, open
	aw.endGate = func() {
		r.hist.Append(history.Event{Kind: history.FaultEnd, Fault: history.FaultCommandHold, Target: client, Cycle: r.currentCycle()})
	}
	t.mu.Unlock()
}

// openGate lets the commands held after a reply go, for the awaits whose
// held messages were let go (the step after each has ended).
func (t *taps) openGate() {
	if t == nil {
		return
	}
	t.mu.Lock()
	var gates []*await
	for _, aw := range t.opened {
		if aw.gate != nil {
			gates = append(gates, aw)
		}
	}
	t.opened = nil
	t.mu.Unlock()
	for _, aw := range gates {
		t.mu.Lock()
		g, open, end := aw.gate, aw.gateOpen, aw.endGate
		aw.gate, aw.gateOpen, aw.endGate = nil, nil, nil
		t.mu.Unlock()
		if g == nil {
			continue
		}
		g.Disarm()
		close(open)
		end()
	}
}

// dead reports whether a client's worker has died.
func (r *run) dead(client string) bool {
	r.mu.Lock()
	p := r.procs[client]
	r.mu.Unlock()
	if p == nil {
		return true
	}
	select {
	case <-p.dead:
		return true
	default:
		return false
	}
}

// trigger is the client whose command fired the await last waited for.
func (t *taps) trigger() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		return ""
	}
	return t.last.fire.Client
}

// awaitCommand waits for the armed trigger to fire, at most within; a
// trigger that never fires is the finding not-exercised (the lock never
// sent that command) and ends the cycle's steps.
func (r *run) awaitCommand(ctx context.Context, st scenarios.Step, fired <-chan struct{}, afterCommand bool) error {
	select {
	case <-fired:
		r.taps.awaitedNow(fired, afterCommand)
		return nil
	case <-time.After(st.Within.D()):
		r.taps.releaseAll()
		r.hist.Append(history.Event{Kind: history.Note, Op: checker.NoteNotExercised, Cycle: r.currentCycle(),
			Detail: fmt.Sprintf("no command matched %s within %v (%s:%d); the rest of the cycle was skipped", st.Command, st.Within.D(), r.sc.File, st.Line)})
		fmt.Fprintf(r.log, "cycle %d: no command matched %s within %v: not exercised\n", r.currentCycle(), st.Command, st.Within.D())
		return errCycleOver
	case <-ctx.Done():
		return ctx.Err()
	}
}

// describeFire says what fired: "c1 → n1: GET order (at the reply: nil)".
func describeFire(f resp.Fire) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s → %s: %s", f.Client, f.Node, f.Command)
	if f.Command.Op != "" {
		fmt.Fprintf(&b, " during %s", f.Command.Op)
	}
	if f.Phase == resp.AtReply && f.Reply != nil {
		fmt.Fprintf(&b, " (at the reply: %s)", f.Reply.Kind)
	} else {
		b.WriteString(" (before it reached the node)")
	}
	return b.String()
}

// noteTapProblems copies what the taps could not follow into the history.
func (r *run) noteTapProblems() {
	if r.taps == nil {
		return
	}
	for _, n := range r.taps.reg.Notes() {
		r.note("tap", fmt.Sprintf("%s: %s", n.Kind, n.Detail))
	}
}
