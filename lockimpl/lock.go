// Package lockimpl holds the lock implementations under test, behind one
// interface, and a registry that names them. Adding a lock is one new file
// that calls Register from an init function.
package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockfault/lockfault"
)

// ErrNotAcquired means the lock is held by someone else (or a quorum was not
// reached) and this attempt certainly left no grant behind.
var ErrNotAcquired = errors.New("lock not acquired")

// ErrNotHeld means a release or extend found that the caller no longer holds
// the lock (its key expired or belongs to another client).
var ErrNotHeld = errors.New("lock not held")

// Lock is what every implementation satisfies.
//
// Acquire returns ErrNotAcquired (possibly wrapped) when the lock is held by
// someone else; any other error means the outcome is unknown. Release and
// Extend return ErrNotHeld when the caller's grant is gone.
type Lock interface {
	Acquire(ctx context.Context, resource string, opts AcquireOptions) (*Lease, error)
	Release(ctx context.Context, l *Lease) error
	Close() error
}

// Extender is implemented by locks whose lease can be extended explicitly.
type Extender interface {
	Extend(ctx context.Context, l *Lease, ttl time.Duration) error
}

// AcquireOptions are the per-call parameters.
type AcquireOptions struct {
	TTL  time.Duration // lease / key expiry
	Wait time.Duration // how long to keep trying (0: one attempt)
}

// Lease is one grant.
type Lease struct {
	Resource string
	Token    string // the random value identifying the holder
	Fence    int64  // fencing token, 0 when the lock has none
	// Validity is what the lock claims the grant is good for, measured from
	// the end of Acquire (Redlock: TTL - elapsed - drift). Zero means the lock
	// claims no end (for example while a watchdog keeps renewing it).
	Validity time.Duration
	// ValidUntil is Validity as an absolute time. Read from time.Now() it
	// carries Go's monotonic reading and the worker places it on the
	// monotonic timeline, whatever the wall clock does. Read from
	// Config.Now (a wall time, no monotonic reading) it is placed on the
	// client's wall clock, so a step of that clock (clock-client) moves it:
	// a lock that measures validity on wall time is exposed.
	ValidUntil time.Time
	// Renewing says the lock renews this grant on its own (a watchdog, a
	// heartbeat, an auto-extending library) and claims it holds until it
	// is released or the lock reports it lost: Validity and ValidUntil are
	// then what the lock last knew, or zero when it does not say. Without
	// Renewing, a zero or negative Validity means the grant has expired.
	Renewing bool
	// State is implementation-private.
	State any
}

// Endpoints tell a lock where its servers are.
type Endpoints struct {
	Primary   string   `json:"primary,omitempty"`   // single-master locks
	Sentinels []string `json:"sentinels,omitempty"` // discover the primary through Sentinel
	Master    string   `json:"master,omitempty"`    // Sentinel's master name
	Masters   []string `json:"masters,omitempty"`   // independent masters (Redlock)
	Etcd      []string `json:"etcd,omitempty"`      // etcd client URLs
	// Cluster lists a Redis Cluster's nodes as this client reaches them
	// (the seeds of a cluster client); ClusterRemap maps every address the
	// cluster announces (in MOVED, ASK, CLUSTER SLOTS/SHARDS) to the
	// address this client reaches that node at: a cluster client dials
	// through it (go-redis's Dialer, redis-py's address_remap).
	Cluster      []string          `json:"cluster,omitempty"`
	ClusterRemap map[string]string `json:"cluster_remap,omitempty"`
	// Password authenticates every connection to a Redis node (AUTH), as
	// production deployments require; "" for none. Not used for Sentinels
	// or etcd.
	Password string `json:"password,omitempty"`
}

// Clock is the client's wall clock. Workers substitute one that the
// clock-client fault steps, read without a monotonic reading, as a wall
// clock read from another language or from Unix time is. (A worker built
// with the clock overlay moves time.Now's wall reading as well, for code
// that never reads Config.Now: docs/FAULTS.md.) The built-in locks
// measure durations on Go's monotonic clock (time.Now, time.Since), as a
// careful lock does; a lock that computes validity or elapsed time from
// Config.Now is moved by a client clock step (property clock/client-steps).
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// SystemClock is the real clock.
var SystemClock Clock = systemClock{}

// Config is handed to a Factory.
type Config struct {
	ClientID  string // unique per worker
	Endpoints Endpoints
	Options   map[string]string // lock-specific options from the scenario
	Clock     Clock
	// Failpoint is called by implementations at named points between steps
	// (for example "after-setnx"); the worker may crash or pause there.
	Failpoint func(name string)
	// OnRenew is called when the lock renews a lease on its own (watchdog).
	OnRenew func(l *Lease)
}

// Hit calls the failpoint hook if there is one.
func (c Config) Hit(name string) {
	if c.Failpoint != nil {
		c.Failpoint(name)
	}
}

// Now reads the configured wall clock.
func (c Config) Now() time.Time {
	if c.Clock == nil {
		return time.Now()
	}
	return c.Clock.Now()
}

// Option returns a lock option or def.
func (c Config) Option(name, def string) string {
	if v, ok := c.Options[name]; ok {
		return v
	}
	return def
}

// Factory builds a lock from its config.
type Factory func(cfg Config) (Lock, error)

// Info describes a registered lock.
type Info struct {
	Name     string
	Source   string          // where the algorithm comes from
	Promises string          // what it claims
	Needs    lockfault.Needs // which endpoints it uses
	Options  []string        // option names it understands
	// Caps are the promises beyond mutual exclusion that the lock claims
	// (CapExtend, CapFencing, ...): the property suite attacks exactly
	// these and reports the others as "not claimed".
	Caps []string
	// Failpoints are the failpoint names the lock's own code hits (the
	// worker's critical section adds cs-after-read and cs-before-write).
	Failpoints []string
	// Version is the exact version of the lock's code: a library's module
	// or package version ("" for lockfault's own algorithms).
	Version string
}

// What a lock may need (Info.Needs).
const (
	NeedsSingle  = lockfault.NeedsSingle
	NeedsMasters = lockfault.NeedsMasters
	NeedsEtcd    = lockfault.NeedsEtcd
	NeedsCluster = lockfault.NeedsCluster
)

// Capabilities a lock may claim (Info.Caps).
const (
	CapExtend     = "extend"      // Extend moves a held lease's expiry (lockimpl.Extender)
	CapFencing    = "fencing"     // every grant carries a strictly increasing fencing token
	CapReentrant  = "reentrant"   // the holder may acquire again and must release as often
	CapWatchdog   = "watchdog"    // the lock renews a live holder's lease on its own
	CapReplicaAck = "replica-ack" // a grant waits for replicas to acknowledge the key
)

// AllCaps lists every capability, in a stable order.
var AllCaps = []string{CapExtend, CapFencing, CapReentrant, CapWatchdog, CapReplicaAck}

// Has reports whether the lock claims a capability.
func (i Info) Has(c string) bool { return slices.Contains(i.Caps, c) }

// Declared keeps the options the lock declares (Options) and drops the
// rest: nil when none is left.
func (i Info) Declared(opts map[string]string) map[string]string {
	var out map[string]string
	for k, v := range opts {
		if slices.Contains(i.Options, k) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

var (
	regMu    sync.Mutex
	registry = map[string]registered{}
)

type registered struct {
	info    Info
	factory Factory
}

// Register adds a lock. It panics on a duplicate name.
func Register(info Info, f Factory) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[info.Name]; dup {
		panic("lockimpl: duplicate lock " + info.Name)
	}
	registry[info.Name] = registered{info, f}
}

// New builds the named lock.
func New(name string, cfg Config) (Lock, error) {
	regMu.Lock()
	r, ok := registry[name]
	regMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("unknown lock %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	for k := range cfg.Options {
		if !slices.Contains(r.info.Options, k) {
			return nil, fmt.Errorf("lock %s: unknown option %q (allowed: %s)", name, k, strings.Join(r.info.Options, ", "))
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock
	}
	return r.factory(cfg)
}

// Lookup returns a lock's description.
func Lookup(name string) (Info, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	r, ok := registry[name]
	return r.info, ok
}

// Names lists the registered locks, sorted.
func Names() []string {
	regMu.Lock()
	defer regMu.Unlock()
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
