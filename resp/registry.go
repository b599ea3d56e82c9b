package resp

import (
	"maps"
	"slices"
	"sync"
	"time"
)

// Registry holds the triggers of one run and what its taps saw: the
// scripts they passed (by SHA), the shapes of the commands each client
// sent, and notes on connections they could not follow. Every tap of a
// registry counts matches together. Safe for concurrent use.
type Registry struct {
	mu      sync.Mutex
	armed   []*Armed
	op      func(client string) string
	scripts map[string]string
	shapes  map[Shape]bool
	notes   []Note
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{scripts: map[string]string{}, shapes: map[Shape]bool{}}
}

// SetOpSource sets the function that names the operation a client has in
// flight (acquire, release, …): it fills Command.Op, Trigger.Op matches it
// and Shape records it. It is called for every command, on the tap's
// connection goroutine: it must be quick and must not call the registry.
func (r *Registry) SetOpSource(f func(client string) string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.op = f
}

// Armed is a trigger waiting for its nth match.
type Armed struct {
	reg      *Registry
	t        Trigger
	matched  int  // guarded by reg.mu
	live     bool // guarded by reg.mu
	released chan Release
}

// Client is the client the trigger watches ("" for every client).
func (a *Armed) Client() string { return a.t.Client }

// Arm validates t and arms it: its count of matches starts now.
func (r *Registry) Arm(t Trigger) (*Armed, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	a := &Armed{reg: r, t: t.normal(), live: true, released: make(chan Release, 1)}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armed = append(r.armed, a)
	return a, nil
}

// Disarm removes the trigger if it has not fired, and reports whether it
// had not.
func (a *Armed) Disarm() bool {
	a.reg.mu.Lock()
	defer a.reg.mu.Unlock()
	if !a.live {
		return false
	}
	a.live = false
	a.reg.armed = slices.DeleteFunc(a.reg.armed, func(b *Armed) bool { return b == a })
	return true
}

// Released delivers one Release once the trigger fired and its message
// was let go (at once without OnFire).
func (a *Armed) Released() <-chan Release { return a.released }

// Matched is how many commands matched since the trigger was armed.
func (a *Armed) Matched() int {
	a.reg.mu.Lock()
	defer a.reg.mu.Unlock()
	return a.matched
}

// match counts the match of every armed trigger that accepts the command
// and returns those that reached their nth match (they are spent).
// Triggers are evaluated outside the lock, then counted under it.
func (r *Registry) match(ph Phase, client, node string, c *Command, rep *Reply) []*Armed {
	r.mu.Lock()
	if len(r.armed) == 0 {
		r.mu.Unlock()
		return nil
	}
	candidates := slices.Clone(r.armed)
	r.mu.Unlock()
	candidates = slices.DeleteFunc(candidates, func(a *Armed) bool { return !a.t.matches(ph, client, node, c, rep) })
	if len(candidates) == 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var fired []*Armed
	for _, a := range candidates {
		if !a.live {
			continue
		}
		if a.matched++; a.matched >= a.t.Nth {
			a.live = a.t.Every
			fired = append(fired, a)
		}
	}
	r.armed = slices.DeleteFunc(r.armed, func(a *Armed) bool { return !a.live })
	return fired
}

// release delivers the trigger's Release (once).
func (a *Armed) release(rel Release) {
	select {
	case a.released <- rel:
	default:
	}
}

// enrich completes a command from what the registry knows (the text of an
// EVALSHA's script, the client's op) and records its script and shape.
func (r *Registry) enrich(client string, c *Command) {
	r.mu.Lock()
	op := r.op
	r.mu.Unlock()
	if op != nil {
		c.Op = op(client)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.SHA != "" {
		if text, ok := r.scripts[c.SHA]; ok && c.Script == "" {
			c.Script = text
		} else if c.Script != "" && !ok && len(r.scripts) < MaxScripts {
			r.scripts[c.SHA] = c.Script
		}
	}
	if !c.SetUp() && len(r.shapes) < MaxShapes {
		r.shapes[shapeOf(client, c)] = true
	}
}

// Script returns the text of a script the registry saw by its SHA.
func (r *Registry) Script(sha string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	text, ok := r.scripts[sha]
	return text, ok
}

// Seen returns the distinct shapes of the commands the taps saw (set-up
// commands aside), sorted: what a random search can draw triggers from.
func (r *Registry) Seen() []Shape {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.SortedFunc(maps.Keys(r.shapes), compareShapes)
}

// note records a note (the first MaxNotes).
func (r *Registry) note(n Note) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.notes) < MaxNotes {
		r.notes = append(r.notes, n)
	}
}

// Notes returns the notes recorded so far, oldest first.
func (r *Registry) Notes() []Note {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.notes)
}

// NoteKind says what a note is about.
type NoteKind string

const (
	// NotePassthrough: a parse error; the connection is forwarded untouched
	// from then on, and no trigger fires on it.
	NotePassthrough NoteKind = "passthrough"
	// NoteUnpaired: replies can no longer be paired with requests (RESP2
	// pub/sub, MONITOR, CLIENT REPLY OFF|SKIP, a failed HELLO, a reply no
	// request awaits); replies are forwarded untouched from then on, and
	// only AtRequest triggers fire on the connection.
	NoteUnpaired NoteKind = "unpaired"
	// NoteHoldExpired: a trigger's OnFire did not return within its hold
	// limit; the message was forwarded anyway.
	NoteHoldExpired NoteKind = "hold-expired"
	// NoteDropped: a held request was dropped (Trigger.Drop): its client
	// was gone.
	NoteDropped NoteKind = "dropped"
	// NoteRefused: a connection was closed at once (the upstream could not
	// be reached, or the tap had MaxConns connections).
	NoteRefused NoteKind = "refused"
)

// Note records something a tap did not do as asked, and why.
type Note struct {
	At           time.Time
	Client, Node string
	Conn         uint64
	Kind         NoteKind
	Detail       string
}
