package checker

import (
	"fmt"
	"math/rand"

	"github.com/lockfault/lockfault/history"
)

// gen builds random histories: per key a sequence of holds (legal by
// default), keys running side by side in time, and on demand one
// violation of a chosen class at a chosen point, with the finding it must
// produce.
type gen struct {
	rng     *rand.Rand
	ev      []history.Event
	op      int64
	lease   int
	clients int
	fenced  bool
	t       map[string]int64 // per key: when the next hold may begin (ns)
	val     map[string]int64 // per key: the resource's value
	fence   map[string]int64 // per key: the last token granted
	want    *Finding         // the injected violation's expected finding
	also    []string         // other classes the injection legitimately causes
}

func newGen(seed int64, keys []string, clients int, fenced bool) *gen {
	g := &gen{rng: rand.New(rand.NewSource(seed)), clients: clients, fenced: fenced,
		t: map[string]int64{}, val: map[string]int64{}, fence: map[string]int64{}}
	for _, k := range keys {
		g.t[k] = ms + int64(g.rng.Intn(50))*ms // keys start apart and then run side by side
	}
	return g
}

func (g *gen) add(e history.Event) { g.ev = append(g.ev, e) }

func (g *gen) client() string { return fmt.Sprintf("c%d", 1+g.rng.Intn(g.clients)) }

func (g *gen) otherClient(not string) string {
	for {
		if c := g.client(); c != not {
			return c
		}
	}
}

func (g *gen) nextFence(k string) int64 {
	if !g.fenced {
		return 0
	}
	g.fence[k] += 1 + int64(g.rng.Intn(3))
	return g.fence[k]
}

// grant adds an acquire invoked at inv and granted at at, valid for valid.
func (g *gen) grant(k, p string, inv, at, valid, fence int64) string {
	g.op++
	g.lease++
	lease := fmt.Sprintf("%s-%d", p, g.lease)
	g.add(history.Event{Time: inv, Kind: history.Invoke, Process: p, Op: history.OpAcquire, OpID: g.op, Key: k})
	vu := int64(0)
	if valid > 0 {
		vu = at + valid
	}
	g.add(history.Event{Time: at, Kind: history.OK, Process: p, Op: history.OpAcquire, OpID: g.op, Lease: lease, Key: k, Fence: fence, ValidUntil: vu})
	return lease
}

func (g *gen) release(k, p, lease string, at int64) {
	g.op++
	g.add(history.Event{Time: at, Kind: history.Invoke, Process: p, Op: history.OpRelease, OpID: g.op, Lease: lease, Key: k})
	g.add(history.Event{Time: at + 100, Kind: history.OK, Process: p, Op: history.OpRelease, OpID: g.op, Lease: lease, Key: k})
}

func (g *gen) access(k, p, lease, kind string, at, v, fence int64, rejected bool) {
	e := history.Event{Time: at, Kind: history.Access, Process: p, Lease: lease, Key: k, Access: kind, Fence: fence, Rejected: rejected}
	if !rejected {
		e.Value = history.Int64(v)
	}
	g.add(e)
}

// legal adds one ordinary hold on key k: acquire, a critical section that
// reads the value and writes it plus one, release.
func (g *gen) legal(k string) {
	p := g.client()
	t := g.t[k]
	inv, at := t, t+int64(1+g.rng.Intn(3))*ms
	f := g.nextFence(k)
	lease := g.grant(k, p, inv, at, 100*ms, f)
	g.op++
	v := g.val[k]
	g.add(history.Event{Time: at + 100, Kind: history.Invoke, Process: p, Op: history.OpCS, OpID: g.op, Lease: lease, Key: k})
	g.access(k, p, lease, "read", at+1*ms, v, f, false)
	g.access(k, p, lease, "write", at+2*ms, v+1, f, false)
	g.add(history.Event{Time: at + 2*ms + 100, Kind: history.OK, Process: p, Op: history.OpCS, OpID: g.op, Lease: lease, Key: k, Read: history.Int64(v), Wrote: history.Int64(v + 1)})
	g.val[k] = v + 1
	rel := at + int64(3+g.rng.Intn(3))*ms
	g.release(k, p, lease, rel)
	g.t[k] = rel + int64(g.rng.Intn(3))*ms
}

// Violations the generator can inject, each with the finding it implies.
const (
	injOverlap    = "overlap"
	injStale      = "stale-access"
	injLostUpdate = "lost-update"
	injFenced     = "fenced"
	injInversion  = "fence-inversion"
	injStuck      = "stuck"
)

func (g *gen) inject(kind, k string) {
	t := g.t[k]
	a := g.client()
	b := g.otherClient(a)
	v := g.val[k]
	switch kind {
	case injOverlap: // both valid: b granted during a's hold
		la := g.grant(k, a, t, t+ms, 100*ms, g.nextFence(k))
		lb := g.grant(k, b, t+10*ms, t+20*ms, 100*ms, g.nextFence(k))
		g.release(k, b, lb, t+40*ms)
		g.release(k, a, la, t+70*ms)
		g.want = &Finding{Class: ClassOverlap, Kind: "both-valid", Key: k, Clients: []string{a, b}, Leases: []string{la, lb}, From: t + 20*ms, To: t + 40*ms}
		g.t[k] = t + 80*ms
	case injStale: // a's lease ran out; it still read the resource during b's hold
		la := g.grant(k, a, t, t+ms, 29*ms, g.nextFence(k))
		g.access(k, a, la, "read", t+2*ms, v, 0, false)
		g.access(k, a, la, "write", t+3*ms, v+1, 0, false)
		lb := g.grant(k, b, t+35*ms, t+40*ms, 100*ms, g.nextFence(k))
		g.access(k, b, lb, "read", t+41*ms, v+1, 0, false)
		g.access(k, b, lb, "write", t+42*ms, v+2, 0, false)
		g.access(k, a, la, "read", t+45*ms, v+2, 0, false)
		g.release(k, b, lb, t+50*ms)
		g.release(k, a, la, t+60*ms)
		g.val[k] = v + 2
		g.want = &Finding{Class: ClassOverlap, Kind: "stale-access", Key: k, Clients: []string{a, b}, Leases: []string{la, lb}, From: t + 40*ms, To: t + 45*ms}
		g.t[k] = t + 70*ms
	case injLostUpdate: // a paused between read and write past its lease; b's increment is lost
		la := g.grant(k, a, t, t+ms, 29*ms, g.nextFence(k))
		g.access(k, a, la, "read", t+2*ms, v, 0, false)
		lb := g.grant(k, b, t+35*ms, t+40*ms, 100*ms, g.nextFence(k))
		g.access(k, b, lb, "read", t+41*ms, v, 0, false)
		g.access(k, b, lb, "write", t+42*ms, v+1, 0, false)
		g.access(k, a, la, "write", t+45*ms, v+1, 0, false)
		g.release(k, b, lb, t+50*ms)
		g.release(k, a, la, t+60*ms)
		g.val[k] = v + 1
		g.want = &Finding{Class: ClassCorruption, Key: k, Clients: []string{a, b}, Leases: []string{la, lb}, From: t + 41*ms, To: t + 42*ms}
		g.also = []string{ClassOverlap}
		g.t[k] = t + 70*ms
	case injFenced: // a paused past its lease; its write is refused after b's larger token
		fa := g.nextFence(k)
		la := g.grant(k, a, t, t+ms, 29*ms, fa)
		g.access(k, a, la, "read", t+2*ms, v, fa, false)
		fb := g.nextFence(k)
		lb := g.grant(k, b, t+35*ms, t+40*ms, 100*ms, fb)
		g.access(k, b, lb, "read", t+41*ms, v, fb, false)
		g.access(k, b, lb, "write", t+42*ms, v+1, fb, false)
		g.access(k, a, la, "write", t+45*ms, 0, fa, true)
		g.release(k, b, lb, t+50*ms)
		g.release(k, a, la, t+60*ms)
		g.val[k] = v + 1
		g.want = &Finding{Class: ClassFenced, Kind: "stale-access", Key: k, Clients: []string{a, b}, Leases: []string{la, lb}, From: t + 40*ms, To: t + 45*ms}
		g.t[k] = t + 70*ms
	case injInversion: // b's later grant carries a smaller token: the resource refuses b and accepts stale a
		fb := g.nextFence(k)
		fa := fb + 10
		la := g.grant(k, a, t, t+ms, 29*ms, fa)
		g.access(k, a, la, "read", t+2*ms, v, fa, false)
		lb := g.grant(k, b, t+35*ms, t+40*ms, 100*ms, fb)
		g.access(k, b, lb, "read", t+41*ms, 0, fb, true)
		g.access(k, b, lb, "write", t+42*ms, 0, fb, true)
		g.access(k, a, la, "write", t+45*ms, v+1, fa, false)
		g.release(k, b, lb, t+50*ms)
		g.release(k, a, la, t+60*ms)
		g.val[k] = v + 1
		g.fence[k] = fa
		g.want = &Finding{Class: ClassFenceInversion, Key: k, Clients: []string{b, a}, Leases: []string{lb, la}, From: t + 41*ms, To: t + 42*ms}
		g.also = []string{ClassOverlap}
		g.t[k] = t + 70*ms
	case injStuck: // nobody gets the lock for 2 s although b keeps trying
		for i := int64(0); i < 20; i++ {
			g.op++
			g.add(history.Event{Time: t + i*100*ms, Kind: history.Invoke, Process: b, Op: history.OpAcquire, OpID: g.op, Key: k})
			g.add(history.Event{Time: t + i*100*ms + 90*ms, Kind: history.Fail, Process: b, Op: history.OpAcquire, OpID: g.op, Key: k})
		}
		// The stretch runs from the previous hold's end to the next grant.
		g.want = &Finding{Class: ClassStuck, Key: k, From: -1, To: -1}
		g.t[k] = t + 2000*ms
	default:
		panic(kind)
	}
}

// history returns a history of n holds over keys with at most one injected
// violation (kind "" for none) at a random point of a random key.
func genHistory(seed int64, keys []string, n int, fenced bool, kind string) *gen {
	g := newGen(seed, keys, 4, fenced)
	at := -1
	if kind != "" {
		at = g.rng.Intn(n)
	}
	for i := 0; i < n; i++ {
		k := keys[g.rng.Intn(len(keys))]
		if i == at {
			g.inject(kind, k)
			continue
		}
		g.legal(k)
	}
	return g
}
