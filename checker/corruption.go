package checker

import (
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockfault/lockfault/history"
)

// RMWInput and RMWOutput describe one critical section as ONE
// read-modify-write operation. (Checking reads and writes as separate
// register operations would accept a lost update.)
type RMWInput struct {
	Process string
	Lease   string
}

// RMWOutput is what the section observed and did.
type RMWOutput struct {
	Read     int64
	Wrote    int64
	HasWrite bool // false when the section never wrote (crashed, or the write was rejected)
	Rejected bool // the write was refused by fencing
}

// RMWModel is a register where each operation reads the value and writes
// another; it is linearizable iff no two sections interleaved.
var RMWModel = porcupine.Model{
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		s := state.(int64)
		out := output.(RMWOutput)
		if out.Read != s {
			return false, s
		}
		if out.HasWrite {
			return true, out.Wrote
		}
		return true, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(RMWInput), output.(RMWOutput)
		switch {
		case out.Rejected:
			return fmt.Sprintf("%s read %d, write refused", in.Lease, out.Read)
		case !out.HasWrite:
			return fmt.Sprintf("%s read %d (no write)", in.Lease, out.Read)
		}
		return fmt.Sprintf("%s read %d wrote %d", in.Lease, out.Read, out.Wrote)
	},
	DescribeState: func(state any) string { return fmt.Sprint(state.(int64)) },
}

// Sections turns the resource's access log into operations: each accepted
// read paired with the next access of the same lease when that is a write.
// Call and Return are the resource's own timestamps of the read and the
// write, the real moments of effect.
func Sections(events []history.Event) []porcupine.Operation {
	clients := map[string]int{}
	var names []string
	for _, e := range events {
		if e.Kind == history.Access {
			if _, ok := clients[e.Process]; !ok {
				clients[e.Process] = 0
				names = append(names, e.Process)
			}
		}
	}
	sort.Strings(names)
	for i, n := range names {
		clients[n] = i
	}
	var ops []porcupine.Operation
	pending := map[string]*history.Event{}
	flush := func(r *history.Event, w *history.Event) {
		out := RMWOutput{Read: *r.Value}
		ret := r.Time
		if w != nil {
			ret = w.Time
			if w.Rejected {
				out.Rejected = true
			} else {
				out.HasWrite, out.Wrote = true, *w.Value
			}
		}
		ops = append(ops, porcupine.Operation{
			ClientId: clients[r.Process],
			Input:    RMWInput{Process: r.Process, Lease: r.Lease},
			Call:     r.Time, Output: out, Return: ret,
		})
	}
	for i := range events {
		e := &events[i]
		if e.Kind != history.Access {
			continue
		}
		key := e.Process + "/" + e.Lease
		switch e.Access {
		case "read":
			if p := pending[key]; p != nil {
				flush(p, nil)
			}
			delete(pending, key)
			if !e.Rejected && e.Value != nil {
				pending[key] = e
			}
		case "write":
			if p := pending[key]; p != nil {
				flush(p, e)
				delete(pending, key)
			} else if !e.Rejected && e.Value != nil {
				// A write with no read before it: a blind write, still an effect.
				ops = append(ops, porcupine.Operation{ClientId: clients[e.Process], Input: RMWInput{Process: e.Process, Lease: e.Lease},
					Call: e.Time, Return: e.Time, Output: RMWOutput{Read: *e.Value - 1, Wrote: *e.Value, HasWrite: true}})
			}
		}
	}
	for _, p := range pending {
		flush(p, nil)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	return ops
}

// Corruption checks the critical sections for linearizability. It returns a
// finding per lost update it can name, and porcupine's result (ok, illegal,
// unknown).
func Corruption(events []history.Event) ([]Finding, string) {
	ops := Sections(events)
	if len(ops) == 0 {
		return nil, string(porcupine.Ok)
	}
	res := porcupine.CheckOperationsTimeout(RMWModel, ops, 30*time.Second)
	if res == porcupine.Ok {
		return nil, string(res)
	}
	// Name the culprits: overlapping sections that read the same value.
	var out []Finding
	for i := 0; i < len(ops); i++ {
		for j := i + 1; j < len(ops) && ops[j].Call <= ops[i].Return; j++ {
			a, b := ops[i].Output.(RMWOutput), ops[j].Output.(RMWOutput)
			ai, bi := ops[i].Input.(RMWInput), ops[j].Input.(RMWInput)
			if ai.Process == bi.Process || !(a.HasWrite && b.HasWrite) {
				continue
			}
			out = append(out, Finding{
				Class:   ClassCorruption,
				Clients: []string{ai.Process, bi.Process},
				Leases:  []string{ai.Lease, bi.Lease},
				From:    ops[j].Call, To: min(ops[i].Return, ops[j].Return),
				Detail: fmt.Sprintf("lost update: %s read %d and wrote %d while %s read %d and wrote %d; the critical sections interleaved",
					ai.Lease, a.Read, a.Wrote, bi.Lease, b.Read, b.Wrote),
			})
		}
	}
	if len(out) == 0 {
		out = append(out, Finding{Class: ClassCorruption, From: ops[0].Call, To: ops[len(ops)-1].Return,
			Detail: fmt.Sprintf("the critical sections are not linearizable (porcupine: %s); see linearizability.html", res)})
	}
	if res == porcupine.Unknown {
		for i := range out {
			out[i].Detail += " (porcupine timed out: result unknown)"
		}
	}
	return out, string(res)
}
