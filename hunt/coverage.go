package hunt

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/resp"
)

// Coverage abstracts one run into what it covered: a bounded set of
// short keys, the learning search's feedback (see docs/HUNT.md, "The learning
// search"). A key names a situation, never a time or a client
// name, so two runs that reach the same situation cover the same key:
//
//   - "at pause-client(holder:cs): holder:cs waiter:acquire": a fault began
//     while its target (a client, by its role) and every client were
//     doing that: which operation the fault interrupted, who held what;
//   - "after pause-client: holder:cs cs:ok release:fail": the next
//     completions (at most afterOps) of a client, by its role when the
//     fault began;
//   - "gap 0-0.1 fault": the time from one holder's end to the next
//     holder's grant of the same key, in TTLs (below 0: an overlap);
//   - "left <0 fault": the validity a holder had left, in TTLs, when
//     it touched the resource;
//   - "op release:info fault": how each operation completed, under a fault
//     or not;
//   - "cmd release GET": the commands the lock sent, per operation (the
//     RESP taps).
//
// At most maxRunKeys keys per run.
func Coverage(events []history.Event, ttl time.Duration, cmds []resp.Shape) []string {
	c := &cover{ttl: ttl, inflight: map[string]string{}, holds: map[string]string{}, until: map[string]int64{},
		active: map[string]int{}, after: map[string]*afterFault{}, lastEnd: map[string]holdEnd{}, keys: map[string]bool{}, seen: map[string]bool{}, leaseKey: map[string]string{}}
	for _, e := range events {
		c.step(e)
	}
	for _, s := range cmds {
		if s.Op != "" {
			c.add("cmd " + s.Op + " " + scriptForms(s.Name))
		}
	}
	out := make([]string, 0, len(c.keys))
	for k := range c.keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// maxRunKeys bounds the keys of one run; afterOps the completions a key
// follows a client for after a fault.
const (
	maxRunKeys = 256
	afterOps   = 2
)

type cover struct {
	ttl      time.Duration
	inflight map[string]string // client → operation in flight
	holds    map[string]string // client → lease it holds
	leaseKey map[string]string // lease → key
	until    map[string]int64  // lease → valid until (monotonic ns)
	active   map[string]int    // fault → started and not healed
	after    map[string]*afterFault
	lastEnd  map[string]holdEnd // key → the last holder's end
	keys     map[string]bool
	seen     map[string]bool // client names
}

// afterFault follows one client's completions after a fault began.
type afterFault struct {
	prefix string
	ops    []string
}

type holdEnd struct {
	client string
	at     int64
}

func (c *cover) add(k string) {
	if len(c.keys) < maxRunKeys {
		c.keys[k] = true
	}
}

func (c *cover) faultOn() string {
	for _, n := range c.active {
		if n > 0 {
			return "fault"
		}
	}
	return "calm"
}

// role is what a client was doing: holder or not, and its operation.
func (c *cover) role(client string) string {
	r := "idle"
	if c.holds[client] != "" {
		r = "holder"
	} else if c.inflight[client] == history.OpAcquire {
		r = "waiter"
	}
	if op := c.inflight[client]; op != "" {
		return r + ":" + op
	}
	return r
}

func (c *cover) clients() []string {
	cs := slices.Collect(maps.Keys(c.seen))
	sort.Strings(cs)
	return cs
}

func (c *cover) step(e history.Event) {
	switch e.Kind {
	case history.FaultStart:
		c.active[e.Fault]++
		var roles []string
		for _, cl := range c.clients() {
			roles = append(roles, c.role(cl))
		}
		sort.Strings(roles)
		target := e.Target
		if c.seen[e.Target] {
			target = c.role(e.Target) // a client, by what it was doing
		}
		c.add(fmt.Sprintf("at %s(%s): %s", e.Fault, target, strings.Join(roles, " ")))
		for _, cl := range c.clients() {
			c.after[cl] = &afterFault{prefix: fmt.Sprintf("after %s: %s", e.Fault, c.role(cl))}
		}
	case history.FaultEnd:
		if c.active[e.Fault] > 0 {
			c.active[e.Fault]--
		}
	case history.Invoke:
		c.inflight[e.Process] = e.Op
		c.seen[e.Process] = true
	case history.OK, history.Fail, history.Info:
		delete(c.inflight, e.Process)
		c.add(fmt.Sprintf("op %s:%s %s", e.Op, e.Kind, c.faultOn()))
		if a := c.after[e.Process]; a != nil {
			a.ops = append(a.ops, e.Op+":"+e.Kind)
			if len(a.ops) == afterOps {
				c.add(a.prefix + " " + strings.Join(a.ops, " "))
				delete(c.after, e.Process)
			}
		}
		c.grant(e)
	case history.Renew:
		if e.ValidUntil > 0 {
			c.until[e.Lease] = e.ValidUntil
		}
	case history.Access:
		if u, ok := c.until[e.Lease]; ok && u > 0 {
			c.add(fmt.Sprintf("left %s %s", c.bucket(u-e.Time), c.faultOn()))
		}
	}
}

// grant follows who holds what: an acquire's grant, an extend's new
// validity, a release's end.
func (c *cover) grant(e history.Event) {
	switch {
	case e.Op == history.OpAcquire && e.Kind == history.OK:
		if last, ok := c.lastEnd[e.Key]; ok && last.client != e.Process {
			c.add(fmt.Sprintf("gap %s %s", c.bucket(e.Time-last.at), c.faultOn()))
		}
		for cl, l := range c.holds {
			// Another client still holds the key by its own account.
			if cl != e.Process && c.leaseKey[l] == e.Key {
				c.add(fmt.Sprintf("gap %s %s", "overlap", c.faultOn()))
			}
		}
		c.holds[e.Process] = e.Lease
		c.leaseKey[e.Lease] = e.Key
		if e.ValidUntil > 0 {
			c.until[e.Lease] = e.ValidUntil
		}
	case e.Op == history.OpExtend && e.Kind == history.OK && e.ValidUntil > 0:
		c.until[e.Lease] = e.ValidUntil
	case e.Op == history.OpRelease:
		if l := c.holds[e.Process]; l != "" {
			c.lastEnd[c.leaseKey[l]] = holdEnd{client: e.Process, at: e.Time}
		}
		delete(c.holds, e.Process)
	}
}

// bucket names a span in TTLs.
func (c *cover) bucket(ns int64) string {
	if c.ttl <= 0 {
		return "?"
	}
	f := float64(ns) / float64(c.ttl)
	switch {
	case f < 0:
		return "<0"
	case f < 0.1:
		return "0-0.1"
	case f < 0.3:
		return "0.1-0.3"
	case f < 1:
		return "0.3-1"
	}
	return "1+"
}

// hashKey is a coverage key as the corpus keeps it.
func hashKey(k string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(k))
	return h.Sum64()
}
