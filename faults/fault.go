// Package faults is the nemesis: each fault is a small type that injects
// itself on a target and returns how to heal. Adding a fault is one new file
// that calls Register from an init function.
package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/worker"
)

// Heal undoes a fault. A nil Heal means there is nothing to undo.
type Heal func(ctx context.Context) error

// Fault injects one kind of failure.
type Fault interface {
	// Inject applies the fault to the target and returns how to heal it.
	Inject(ctx context.Context, env Env, target string, params Params) (Heal, error)
}

// Params are a step's params, with typed accessors.
type Params map[string]string

// Env is what a fault can act on; the runner implements it.
type Env interface {
	Cluster() *cluster.Cluster
	// Clients resolves a client target: a name (c1), "holder" (the client
	// that most recently got the lock and still holds it), "others" (all
	// but the holder), or "all".
	Clients(target string) ([]Client, error)
	// Repoint tells every worker where the primary is now.
	Repoint(ctx context.Context) error
	// Clone starts a second worker under the named client's identity,
	// which runs rounds beside it until the returned Heal stops it.
	Clone(ctx context.Context, client string) (Heal, error)
	// Logf notes something on the timeline.
	Logf(format string, args ...any)
}

// Client is one worker process. Signal and Send return an error that
// wraps ErrClientGone once its process has died.
type Client interface {
	Name() string
	Signal(sig syscall.Signal) error
	Send(c worker.Command) error
	// Proc is its process as /proc shows it (Pid 0 once it has died).
	Proc() cluster.ProcState
}

// ErrClientGone: the client's process has died (crashed by a fault, or on
// its own). A heal has nothing to undo on it: a dead process is neither
// paused nor stepped, and a client restarted under its name is a new
// process the fault never touched.
var ErrClientGone = errors.New("client process is gone")

// applyClients applies a fault to each client with do, skipping the clients
// whose process is gone (a crashed client waiting for its restart is
// neither paused, stepped nor armed; a hunt drew a crash of c1 and then a
// pause of "the others", c1 among them, and the run ended as a harness
// failure). It returns the clients it reached. If do fails on one for
// another reason, those reached are undone with undo (if any) and the
// error is returned; if every client is gone, an error wrapping
// ErrClientGone (the fault attacked nothing).
func applyClients(cls []Client, do, undo func(Client) error) ([]Client, error) {
	var reached []Client
	var gone error
	for _, c := range cls {
		err := do(c)
		switch {
		case err == nil:
			reached = append(reached, c)
		case errors.Is(err, ErrClientGone):
			gone = err
		default:
			if undo != nil {
				healClients(reached, undo)
			}
			return nil, err
		}
	}
	if len(reached) == 0 && gone != nil {
		return nil, gone
	}
	return reached, nil
}

// healClients undoes a fault on each client with undo, skipping clients
// that are gone; it returns the first other error.
func healClients(cls []Client, undo func(Client) error) error {
	var first error
	for _, c := range cls {
		if err := undo(c); err != nil && !errors.Is(err, ErrClientGone) && first == nil {
			first = err
		}
	}
	return first
}

// Targets is what a fault acts on.
type Targets string

// What a fault may act on.
const (
	TargetsNode   Targets = "node"   // nodes: a name (n1) or a role (primary, masters, all, ...)
	TargetsClient Targets = "client" // clients: a name (c1), holder, others, all, trigger
	TargetsNone   Targets = "none"   // the topology as a whole (a Sentinel failover)
)

// Info describes a registered fault.
type Info struct {
	Name        string
	Description string
	Targets     Targets
	Params      []string // params it understands
	// Topologies, when set, are the only topologies the fault applies to
	// (the runner refuses a step of it on another before anything starts).
	Topologies []lockfault.TopologyKind
	// Unreachable names the topologies whose nodes the fault cannot move
	// at all, with the reason: a step of it there is refused before
	// anything starts (Reaches), and a property whose schedule has one is
	// not exercised on such a lock.
	Unreachable map[lockfault.TopologyKind]string
}

type entry struct {
	info Info
	f    Fault
}

var registry = map[string]entry{}

// Register adds a fault; it panics on a duplicate.
func Register(info Info, f Fault) {
	if _, dup := registry[info.Name]; dup {
		panic("faults: duplicate " + info.Name)
	}
	registry[info.Name] = entry{info, f}
}

// Get returns a fault by name.
func Get(name string) (Fault, Info, error) {
	e, ok := registry[name]
	if !ok {
		return nil, Info{}, fmt.Errorf("unknown fault %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return e.f, e.info, nil
}

// Reaches says whether a fault can act on a topology: an error naming the
// topology and why not (wrapping ErrNotReachable) when the fault does not
// apply there (Info.Topologies) or cannot move its nodes
// (Info.Unreachable); nil for an unknown fault (Check names it).
func Reaches(name string, kind lockfault.TopologyKind) error {
	e, ok := registry[name]
	if !ok {
		return nil
	}
	allowed := func(ok func(lockfault.TopologyKind) bool) string {
		var ks []string
		for _, k := range lockfault.TopologyKinds {
			if ok(k) {
				ks = append(ks, string(k))
			}
		}
		return strings.Join(ks, ", ")
	}
	if ts := e.info.Topologies; len(ts) > 0 && !slices.Contains(ts, kind) {
		return notReachable(fmt.Sprintf("fault %s does not apply to a %s topology (allowed: %s)", name, kind,
			allowed(func(k lockfault.TopologyKind) bool { return slices.Contains(ts, k) })))
	}
	if why, ok := e.info.Unreachable[kind]; ok {
		return notReachable(fmt.Sprintf("fault %s cannot reach the nodes of topology %s: %s (allowed: %s)", name, kind, why,
			allowed(func(k lockfault.TopologyKind) bool {
				_, no := e.info.Unreachable[k]
				return !no && (len(e.info.Topologies) == 0 || slices.Contains(e.info.Topologies, k))
			})))
	}
	return nil
}

// notReachable is Reaches' refusal: its message as it is, and
// errors.Is(err, ErrNotReachable).
type notReachable string

func (e notReachable) Error() string { return string(e) }
func (notReachable) Unwrap() error   { return ErrNotReachable }

// Validator is implemented by faults whose params need more than a name
// check; Check calls it before anything starts.
type Validator interface {
	Validate(p Params) error
}

// Check validates a step's fault name and params without running it: every
// param is one the fault knows, and within its range (a *ParamError names
// it). Durations are bounded by MaxDuration.
func Check(name string, params Params) error {
	f, info, err := Get(name)
	if err != nil {
		return err
	}

	for k := range params {
		if !slices.Contains(info.Params, k) {
			allowed := "none"
			if len(info.Params) > 0 {
				allowed = strings.Join(info.Params, ", ")
			}
			return fmt.Errorf("fault %s has no param %q (allowed: %s)", name, k, allowed)
		}
	}
	if v, ok := f.(Validator); ok {
		return v.Validate(params)
	}
	return nil
}

// Names lists the registered faults.
func Names() []string {
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// All lists every fault's description.
func All() []Info {
	var out []Info
	for _, n := range Names() {
		out = append(out, registry[n].info)
	}
	return out
}

// nodes resolves a node target.
func nodes(env Env, target string) ([]*cluster.Member, error) {
	if target == "" {
		return nil, fmt.Errorf("this fault needs a node target")
	}
	return env.Cluster().Resolve(target)
}

// healAll runs heals in reverse order.
func healAll(hs []Heal) Heal {
	return func(ctx context.Context) error {
		var first error
		for i := len(hs) - 1; i >= 0; i-- {
			if hs[i] == nil {
				continue
			}
			if err := hs[i](ctx); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
}
