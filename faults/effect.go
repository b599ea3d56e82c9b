package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockfault/lockfault/cluster"
)

// Effect is what a fault step was seen to do, read back right after it was
// applied: the runner records it in the history at the step, and a step
// whose effect was not seen leaves its cycle without evidence.
type Effect struct {
	// Seen: the fault took effect (a process stopped, a pid gone, a role
	// changed, a link in use cut).
	Seen bool
	// Unchecked: the backend cannot show the effect (a remote Docker
	// daemon's processes): neither proof nor disproof, so the cycle keeps
	// its evidence and the history says why it was not checked.
	Unchecked bool
	// What was seen, or not: "n1 stopped (pid 4242, state T)".
	What string
	// During, when set, is read once more as the fault is healed: what it
	// did while it lasted (the bytes a client sent into a cut link, or
	// that crossed a slowed one). The runner records it at the heal.
	During func(context.Context) string
	// Later, when set on an effect not seen, judges it once more as the
	// fault is healed (before the heal): a link nobody had open when it
	// was cut, that a client dialed while the cut lasted. The runner
	// records the step as pending until then.
	Later func(context.Context) Effect
}

// ErrNotReachable: the fault cannot act on its target at all (a node clock
// fault on an etcd node, which reads its clock through the vDSO). The
// runner records the step as not exercised, with the reason.
var ErrNotReachable = errors.New("this fault cannot reach its target")

// effector is implemented by a fault that checks its own effect: effect
// runs just before the step is injected (to read what the fault will
// change: pids, open connections) and returns the check the runner calls
// right after Inject returned. Each fault has its check beside it, in its
// own file.
type effector interface {
	effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect
}

// Prove returns the check of a step's effect, from the one place that knows
// every fault (the registry): nil when the fault has no check of its own (a
// failpoint is proved by its firing, as the history already records; a
// client clock step is not checked here).
func Prove(ctx context.Context, name string, env Env, target string, p Params) func(context.Context) Effect {
	e, ok := registry[name]
	if !ok {
		return nil
	}
	ef, ok := e.f.(effector)
	if !ok {
		return nil
	}
	return ef.effect(ctx, env, target, p)
}

// Proved reports whether a fault records its effect (docs, list).
func Proved(name string) bool {
	e, ok := registry[name]
	if !ok {
		return false
	}
	_, ok = e.f.(effector)
	return ok
}

// effects joins per-target observations: seen when any target was, and
// unchecked when none was seen and some could not be checked.
type effects struct {
	parts           []string
	seen, unchecked bool
}

func (e *effects) add(seen bool, format string, args ...any) {
	e.parts = append(e.parts, fmt.Sprintf(format, args...))
	e.seen = e.seen || seen
}

func (e *effects) cannot(format string, args ...any) {
	e.parts = append(e.parts, "not checked: "+fmt.Sprintf(format, args...))
	e.unchecked = true
}

func (e *effects) result() Effect {
	if len(e.parts) == 0 {
		return Effect{What: "no target"}
	}
	return Effect{Seen: e.seen, Unchecked: !e.seen && e.unchecked, What: strings.Join(e.parts, "; ")}
}

// nodeProcs reads the server processes of nodes (before a kill or restart).
func nodeProcs(ctx context.Context, ms []*cluster.Member) map[string]cluster.ProcState {
	out := map[string]cluster.ProcState{}
	for _, m := range ms {
		if s, err := cluster.NodeProc(ctx, m.Node); err == nil {
			out[m.Name] = s
		}
	}
	return out
}

// nodesEffect reads the target nodes again (nodes already resolved by the
// caller) and judges each with ok.
func nodesEffect(ctx context.Context, ms []*cluster.Member, judge func(m *cluster.Member, now cluster.ProcState, fx *effects)) Effect {
	var fx effects
	for _, m := range ms {
		now, err := cluster.NodeProc(ctx, m.Node)
		if err != nil {
			fx.cannot("%s: %v", m.Name, err)
			continue
		}
		judge(m, now, &fx)
	}
	return fx.result()
}

// restartedEffect is the check of a fault that kills nodes (kill, power
// loss, restart): each node's process before is gone, and, once restarted,
// a new pid serves.
func restartedEffect(ctx context.Context, env Env, target string) func(context.Context) Effect {
	ms, err := nodes(env, target)
	if err != nil {
		return nil
	}
	before := nodeProcs(ctx, ms)
	return func(ctx context.Context) Effect {
		return nodesEffect(ctx, ms, func(m *cluster.Member, now cluster.ProcState, fx *effects) {
			was, ok := before[m.Name]
			switch {
			case !ok || was.Pid == 0:
				fx.add(false, "%s had no process to take down (now %v)", m.Name, now)
			case now.Pid == 0:
				fx.add(true, "%s: pid %d gone, no process now", m.Name, was.Pid)
			case now.Pid != was.Pid:
				fx.add(true, "%s: pid %d gone, restarted as pid %d", m.Name, was.Pid, now.Pid)
			default:
				fx.add(false, "%s: pid %d still serves", m.Name, was.Pid)
			}
		})
	}
}

// linkWait bounds how long a link fault's check waits for a connection on
// its links when none was open as the fault began: a client whose pool had
// just dropped a connection (one that timed out under the previous cycle's
// latency) opens a new one through the same proxy within its next call.
// The wait counts towards the step's own duration, as clock-drift's does.
const linkWait = time.Second

// linkUsed is the check of a fault on links (latency, partitions): the
// links were in use as it began (connections open on them, read before it
// is applied), or a connection was opened on one of them within linkWait
// after it was applied; else it is judged again at the heal (Effect.Later):
// seen when a client dialed one of the links while the fault lasted
// (counted from before it was applied).
func linkUsed(env Env, names []string) func(context.Context) Effect {
	before := linkConns(env, names)
	accepted, acceptErr := env.Cluster().Net.Accepted(names)
	return func(ctx context.Context) Effect {
		before.During = linkTally(env, names)
		if before.Seen || before.Unchecked {
			return before
		}
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		deadline := time.After(linkWait)
		for {
			select {
			case <-ctx.Done():
				return before
			case <-deadline:
				before.What += fmt.Sprintf("; none opened within %v", linkWait)
				before.Later = dialedDuring(env, names, accepted, acceptErr)
				return before
			case <-t.C:
				if now := linkConns(env, names); now.Seen {
					now.What = "none open as it began; within " + linkWait.String() + ": " + now.What
					now.During = before.During
					return now
				}
			}
		}
	}
}

// dialedDuring is the check at a link fault's heal: connections the
// harness's toxiproxy server accepted on the links since the fault began
// (first: the counts read then), each a client that tried the link while
// it was cut or slowed (a reset link leaves none of them open).
func dialedDuring(env Env, names []string, first map[string]uint64, firstErr error) func(context.Context) Effect {
	return func(context.Context) Effect {
		if firstErr != nil {
			return Effect{What: fmt.Sprintf("dials during it not counted: %v", firstErr)}
		}
		now, err := acceptedSince(env, names, first)
		if err != nil {
			return Effect{What: fmt.Sprintf("dials during it not counted: %v", err)}
		}
		var fx effects
		for _, n := range names {
			k := now[n] - min(first[n], now[n])
			fx.add(k > 0, "%s: %d connection(s) dialed while it lasted", n, k)
		}
		return fx.result()
	}
}

// logLag bounds how long a count of dials waits for the toxiproxy
// server's log, read through a pipe, to catch up with a dial it accepted
// (it logs the dial before the client's first byte is even read).
const logLag = 200 * time.Millisecond

// acceptedSince reads the links' accepted counts, again for up to logLag
// while none has grown since first.
func acceptedSince(env Env, names []string, first map[string]uint64) (map[string]uint64, error) {
	deadline := time.Now().Add(logLag)
	for {
		now, err := env.Cluster().Net.Accepted(names)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if now[n] > first[n] {
				return now, nil
			}
		}
		if time.Now().After(deadline) {
			return now, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// linkConns counts the open connections on proxies (the links a fault is
// about to cut or slow): the lock used a link when one was open on it. The
// socket tables are read once for all the links.
func linkConns(env Env, names []string) Effect {
	var fx effects
	net := env.Cluster().Net
	counts, err := net.ConnsOf(names)
	for _, n := range names {
		k, ok := counts[n]
		if err != nil {
			// One link that cannot be read (a peer proxy on a remote
			// daemon's server): each on its own.
			var e error
			if k, e = net.Conns(n); e != nil {
				fx.cannot("%s: %v", n, e)
				continue
			}
		} else if !ok {
			continue
		}
		fx.add(k > 0, "%s: %d open connection(s)", n, k)
	}
	return fx.result()
}

// linkTally reads the byte counts of every connection on the links right
// after a link fault was applied, and returns what reads them again at its
// heal: per link, the bytes the clients sent into it and the bytes sent
// back to them while the fault lasted (counted by the kernel on the
// proxy's side of each connection: what a client sent into a cut link is
// counted there and dropped by the proxy). A connection opened during the
// fault counts whole; one closed during it, up to the first reading only
// (it is named). Nil when the counts cannot be read (the heal then records
// nothing more).
func linkTally(env Env, names []string) func(context.Context) string {
	net := env.Cluster().Net
	first, err := net.LinkBytes(names)
	if err != nil {
		return nil
	}
	return func(context.Context) string {
		now, err := net.LinkBytes(names)
		if err != nil {
			return fmt.Sprintf("byte counts not read at the heal: %v", err)
		}
		var parts []string
		for _, n := range names {
			var from, to uint64
			closed := 0
			for ino, b := range now[n] {
				a := first[n][ino] // zero for a connection opened since
				from += b.FromClient - min(a.FromClient, b.FromClient)
				to += b.ToClient - min(a.ToClient, b.ToClient)
			}
			for ino := range first[n] {
				if _, ok := now[n][ino]; !ok {
					closed++
				}
			}
			part := fmt.Sprintf("%s: %d bytes sent into it, %d delivered back, on %d connection(s)", n, from, to, len(now[n]))
			if closed > 0 {
				part += fmt.Sprintf(" (%d more closed during it, not counted)", closed)
			}
			parts = append(parts, part)
		}
		return strings.Join(parts, "; ")
	}
}
