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
	Key     string
}

// RMWOutput is what the section observed and did.
type RMWOutput struct {
	Read     int64
	Wrote    int64
	HasWrite bool // false when the section never wrote (crashed, or the write was rejected)
	Rejected bool // the write was refused by fencing
}

// RMWState is the register's value; Any is the state after a stretch that
// could not be judged (the next section may read anything).
type RMWState struct {
	V   int64
	Any bool
}

// rmwStep is the read-modify-write register's transition.
func rmwStep(s RMWState, out RMWOutput) (bool, RMWState) {
	if !s.Any && out.Read != s.V {
		return false, s
	}
	if out.HasWrite {
		return true, RMWState{V: out.Wrote}
	}
	return true, RMWState{V: out.Read}
}

// RMWModelFrom is a register starting at init where each operation reads
// the value and may write another; a set of sections is linearizable iff no
// two of them interleaved.
func RMWModelFrom(init RMWState) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return init },
		Step: func(state, input, output any) (bool, any) {
			return rmwStep(state.(RMWState), output.(RMWOutput))
		},
		DescribeOperation: describeRMW,
		DescribeState: func(state any) string {
			if s := state.(RMWState); !s.Any {
				return fmt.Sprint(s.V)
			}
			return "?"
		},
	}
}

// RMWModel starts at 0, the resource's initial value.
var RMWModel = RMWModelFrom(RMWState{})

func describeRMW(input, output any) string {
	in, out := input.(RMWInput), output.(RMWOutput)
	switch {
	case out.Rejected:
		return fmt.Sprintf("%s read %d, write refused", in.Lease, out.Read)
	case !out.HasWrite:
		return fmt.Sprintf("%s read %d (no write)", in.Lease, out.Read)
	}
	return fmt.Sprintf("%s read %d wrote %d", in.Lease, out.Read, out.Wrote)
}

// Sections turns the resource's access log into operations, per key: each
// accepted read paired with the next access of the same lease when that is
// a write. Call and Return are the resource's own timestamps of the read
// and the write, the real moments of effect. Operations are ordered by
// Call. Client ids number the clients in name order.
func Sections(events []history.Event) map[string][]porcupine.Operation {
	leaseKey := map[string]string{}
	for _, e := range events {
		if e.Kind == history.OK && e.Op == history.OpAcquire && e.Lease != "" {
			leaseKey[e.Lease] = e.Key
		}
	}
	keys := make([]string, len(events))
	for i, e := range events {
		k := e.Key
		if k == "" && e.Lease != "" {
			k = leaseKey[e.Lease]
		}
		keys[i] = k
	}
	return sections(events, keys)
}

func sections(events []history.Event, keyOf []string) map[string][]porcupine.Operation {
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
	ops := map[string][]porcupine.Operation{}
	type pend struct {
		e   *history.Event
		key string
	}
	pending := map[[2]string]pend{}
	flush := func(p pend, w *history.Event) {
		r := p.e
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
		ops[p.key] = append(ops[p.key], porcupine.Operation{
			ClientId: clients[r.Process],
			Input:    RMWInput{Process: r.Process, Lease: r.Lease, Key: p.key},
			Call:     r.Time, Output: out, Return: ret,
		})
	}
	for i := range events {
		e := &events[i]
		if e.Kind != history.Access {
			continue
		}
		k := keyOf[i]
		id := [2]string{e.Process + "/" + e.Lease, k}
		switch e.Access {
		case "read":
			if p, ok := pending[id]; ok {
				flush(p, nil)
			}
			delete(pending, id)
			if !e.Rejected && e.Value != nil {
				pending[id] = pend{e, k}
			}
		case "write":
			if p, ok := pending[id]; ok {
				flush(p, e)
				delete(pending, id)
			} else if !e.Rejected && e.Value != nil {
				// A write with no read before it: a blind write, still an effect.
				ops[k] = append(ops[k], porcupine.Operation{ClientId: clients[e.Process], Input: RMWInput{Process: e.Process, Lease: e.Lease, Key: k},
					Call: e.Time, Return: e.Time, Output: RMWOutput{Read: *e.Value - 1, Wrote: *e.Value, HasWrite: true}})
			}
		}
	}
	for _, p := range pending {
		flush(p, nil)
	}
	for _, o := range ops {
		sort.SliceStable(o, func(i, j int) bool { return o[i].Call < o[j].Call })
	}
	return ops
}

// Segment is a stretch of one key's critical sections that is independent
// of the rest: no section was in flight at its boundaries, so the sections
// before it all happened before it in real time.
type Segment struct {
	Key    string `json:"key,omitempty"`
	From   int64  `json:"from"` // first call
	To     int64  `json:"to"`   // last return
	Ops    int    `json:"ops"`
	Init   int64  `json:"init"`               // the value when it began
	AnyIn  bool   `json:"any_init,omitempty"` // the value was unknown (an earlier stretch was not linearizable)
	Result string `json:"result"`             // Ok, Illegal, Unknown
}

// MaxSegments bounds Result.Segments.
const MaxSegments = 200

// maxVerboseStretch: up to this many sections in flight together, porcupine
// also returns its linearization, from which the value the stretch leaves
// is known. A longer stretch (only a lock that grants everyone at once makes
// one, and its overlaps are findings already) is checked without it, and
// the next stretch starts from any value.
const maxVerboseStretch = 1000

// Segments cuts one key's operations (ordered by call) into independent
// stretches: a new one begins at a call later than every return so far.
func Segments(ops []porcupine.Operation) [][2]int {
	var out [][2]int
	start := 0
	var maxRet int64
	for i, op := range ops {
		if i > 0 && op.Call > maxRet {
			out = append(out, [2]int{start, i})
			start = i
		}
		if i == 0 || op.Return > maxRet {
			maxRet = op.Return
		}
	}
	if len(ops) > 0 {
		out = append(out, [2]int{start, len(ops)})
	}
	return out
}

// corruptionPass checks the critical sections of every key for
// linearizability, stretch by stretch.
func corruptionPass(in *input) []Finding {
	timeout := in.opt.LinearizabilityTimeout
	if timeout <= 0 {
		timeout = DefaultLinearizabilityTimeout
	}
	deadline := time.Now().Add(timeout)
	byKey := sections(in.events, in.evKeys)
	in.work.add(2 * len(in.events)) // sections: two walks of the history
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []Finding
	var segs []Segment
	illegal, unknown := false, false
	for _, k := range keys {
		// Counted: each operation, and each once more as porcupine's input
		// (its own search is bounded by the deadline, not counted).
		in.work.add(2 * len(byKey[k]))
		f, s, n := checkKey(k, byKey[k], deadline)
		out = append(out, f...)
		segs = append(segs, s...)
		in.res.SegmentCount += n
		for _, sg := range s {
			illegal = illegal || sg.Result == string(porcupine.Illegal)
			unknown = unknown || sg.Result == string(porcupine.Unknown)
		}
	}
	switch {
	case illegal:
		in.res.Linearizable = string(porcupine.Illegal)
	case unknown:
		in.res.Linearizable = string(porcupine.Unknown)
	default:
		in.res.Linearizable = string(porcupine.Ok)
	}
	// Keep the interesting stretches: not linearizable, then unknown, then
	// the ones porcupine searched.
	rank := func(s Segment) int {
		switch s.Result {
		case string(porcupine.Illegal):
			return 0
		case string(porcupine.Unknown):
			return 1
		}
		return 2
	}
	sort.SliceStable(segs, func(i, j int) bool { return rank(segs[i]) < rank(segs[j]) })
	if len(segs) > MaxSegments {
		segs = segs[:MaxSegments]
	}
	sort.SliceStable(segs, func(i, j int) bool { return segs[i].From < segs[j].From })
	in.res.Segments = segs
	return out
}

// checkKey checks one key's operations. A stretch of one section is
// checked directly (does it read the value the last one left?); a stretch
// with sections in flight together goes to porcupine, starting from the
// value the stretch before it left, within what is left of the deadline.
// It returns the findings, the non-trivial stretches, and the number of
// stretches.
func checkKey(key string, ops []porcupine.Operation, deadline time.Time) ([]Finding, []Segment, int) {
	var out []Finding
	var segs []Segment
	state := RMWState{}
	var lastWriter string
	cuts := Segments(ops)
	for _, c := range cuts {
		seg := ops[c[0]:c[1]]
		sg := Segment{Key: key, From: seg[0].Call, To: seg[0].Return, Ops: len(seg), Init: state.V, AnyIn: state.Any}
		for _, op := range seg {
			sg.To = max(sg.To, op.Return)
		}
		if len(seg) == 1 {
			op := seg[0]
			in, o := op.Input.(RMWInput), op.Output.(RMWOutput)
			ok, next := rmwStep(state, o)
			if ok {
				state = next
				if o.HasWrite {
					lastWriter = in.Lease
				}
				continue
			}
			sg.Result = string(porcupine.Illegal)
			segs = append(segs, sg)
			detail := fmt.Sprintf("%s read %d but the value was %d", in.Lease, o.Read, state.V)
			if lastWriter != "" {
				detail += fmt.Sprintf(" (last written by %s)", lastWriter)
			}
			detail += ": a write was lost or the value changed outside any critical section"
			out = append(out, Finding{Class: ClassCorruption, Key: key, Clients: []string{in.Process}, Leases: []string{in.Lease},
				From: op.Call, To: op.Return, Detail: detail})
			state = RMWState{Any: true}
			if o.HasWrite {
				state = RMWState{V: o.Wrote}
				lastWriter = in.Lease
			}
			continue
		}
		left := time.Until(deadline)
		var res porcupine.CheckResult = porcupine.Unknown
		var info porcupine.LinearizationInfo
		verbose := len(seg) <= maxVerboseStretch
		if left > 0 && verbose {
			res, info = porcupine.CheckOperationsVerbose(RMWModelFrom(state), seg, left)
		} else if left > 0 {
			res = porcupine.CheckOperationsTimeout(RMWModelFrom(state), seg, left)
		}
		sg.Result = string(res)
		segs = append(segs, sg)
		switch res {
		case porcupine.Ok:
			if verbose {
				state, lastWriter = replay(state, seg, info, lastWriter)
			} else {
				// Too long to keep porcupine's linearization: the next
				// stretch's first section may read any value.
				state, lastWriter = RMWState{Any: true}, ""
			}
		case porcupine.Illegal:
			out = append(out, culprits(key, seg, state)...)
			state = RMWState{Any: true}
		default:
			out = append(out, Finding{Class: ClassUnknown, Key: key, From: sg.From, To: sg.To,
				Detail: fmt.Sprintf("the linearizability check ran out of time (limit %v) on %d critical sections in flight together; corruption is undecided", left.Round(time.Millisecond), len(seg))})
			state = RMWState{Any: true}
		}
	}
	return out, segs, len(cuts)
}

// replay follows porcupine's linearization of a linearizable stretch to the
// value it leaves.
func replay(state RMWState, seg []porcupine.Operation, info porcupine.LinearizationInfo, lastWriter string) (RMWState, string) {
	var best []int
	for _, part := range info.PartialLinearizations() {
		for _, l := range part {
			if len(l) > len(best) {
				best = l
			}
		}
	}
	if len(best) != len(seg) {
		return RMWState{Any: true}, ""
	}
	for _, id := range best {
		_, state = rmwStep(state, seg[id].Output.(RMWOutput))
		if seg[id].Output.(RMWOutput).HasWrite {
			lastWriter = seg[id].Input.(RMWInput).Lease
		}
	}
	return state, lastWriter
}

// culprits names the lost updates of a stretch that is not linearizable:
// sections of different clients, both writing, that were in flight
// together.
func culprits(key string, seg []porcupine.Operation, init RMWState) []Finding {
	var out []Finding
	for i := 0; i < len(seg); i++ {
		for j := i + 1; j < len(seg) && seg[j].Call <= seg[i].Return; j++ {
			a, b := seg[i].Output.(RMWOutput), seg[j].Output.(RMWOutput)
			ai, bi := seg[i].Input.(RMWInput), seg[j].Input.(RMWInput)
			if ai.Process == bi.Process || !(a.HasWrite && b.HasWrite) {
				continue
			}
			out = append(out, Finding{
				Class:   ClassCorruption,
				Key:     key,
				Clients: []string{ai.Process, bi.Process},
				Leases:  []string{ai.Lease, bi.Lease},
				From:    seg[j].Call, To: min(seg[i].Return, seg[j].Return),
				Detail: fmt.Sprintf("lost update: %s read %d and wrote %d while %s read %d and wrote %d; the critical sections interleaved",
					ai.Lease, a.Read, a.Wrote, bi.Lease, b.Read, b.Wrote),
			})
		}
	}
	if len(out) == 0 {
		init := fmt.Sprint(init.V)
		out = append(out, Finding{Class: ClassCorruption, Key: key, From: seg[0].Call, To: seg[len(seg)-1].Return,
			Detail: fmt.Sprintf("the %d critical sections from here are not linearizable starting from the value %s; see linearizability.html", len(seg), init)})
	}
	return out
}
