package history

import "fmt"

// sequence checks what no single line can show: that the lines of a file,
// in file order, form one complete and possible history. Events are
// numbered 1, 2, 3… in file order (a missing seq is a gap, a repeated or
// smaller one a line written twice or moved); every completion (ok, fail,
// info) follows the invoke of its op, by the same client and for the same
// operation, and is its op's only completion; no op id is invoked twice;
// and a client's operation events (invokes and completions) never go back
// in time. Each error reads "field: what is wrong (allowed: ...)"; the
// reader puts file:line before it.
//
// It remembers the op ids seen in two bitsets (the runner numbers ops 1, 2,
// 3…, so they are dense) and only the open operations in a map, so it costs
// a few bits per operation, not an entry.
type sequence struct {
	line      int64 // lines seen
	invoked   idSet
	completed idSet
	open      map[int64]openOp    // invoked, not yet completed
	last      map[string]lastSeen // per client: its latest operation event
}

type openOp struct {
	line    int64
	process string
	op      string
}

type lastSeen struct {
	t, line int64
}

func newSequence() *sequence {
	return &sequence{open: map[int64]openOp{}, last: map[string]lastSeen{}}
}

// next checks the next event in file order.
func (s *sequence) next(e *Event) error {
	s.line++
	if err := s.seq(e.Seq); err != nil {
		return err
	}
	switch e.Kind {
	case Invoke, OK, Fail, Info:
	default:
		return nil
	}
	if e.OpID < 1 {
		return fmt.Errorf("op_id: %d on %s %s (allowed: a positive id pairing an invoke with its completion)", e.OpID, article(e.Kind), e.Kind)
	}
	if p, ok := s.last[e.Process]; ok && e.Time < p.t {
		return fmt.Errorf("t: %d is before %d, the time of %s's previous operation event at line %d (allowed: a client's events never go back in time)",
			e.Time, p.t, clientName(e.Process), p.line)
	}
	s.last[e.Process] = lastSeen{e.Time, s.line}
	if e.Kind == Invoke {
		if s.invoked.has(e.OpID) {
			return fmt.Errorf("op_id: %d is invoked a second time (allowed: a new id for every invoke)", e.OpID)
		}
		s.invoked.add(e.OpID)
		s.open[e.OpID] = openOp{s.line, e.Process, e.Op}
		return nil
	}
	inv, open := s.open[e.OpID]
	switch {
	case open:
	case s.completed.has(e.OpID):
		return fmt.Errorf("op_id: %d completes a second time, as %s (allowed: one ok, fail or info per invoke)", e.OpID, e.Kind)
	default:
		return fmt.Errorf("op_id: %d: %s %s without an earlier invoke of op %d (allowed: a completion follows the invoke of its op)", e.OpID, article(e.Kind), e.Kind, e.OpID)
	}
	if e.Process != inv.process {
		return fmt.Errorf("process: %s completes op %d, which %s invoked at line %d (allowed: %q)", clientName(e.Process), e.OpID, clientName(inv.process), inv.line, inv.process)
	}
	if e.Op != inv.op {
		return fmt.Errorf("op: %q completes op %d, invoked as %q at line %d (allowed: %q)", e.Op, e.OpID, inv.op, inv.line, inv.op)
	}
	delete(s.open, e.OpID)
	s.completed.add(e.OpID)
	return nil
}

// seq checks an event's number against its place in the file.
func (s *sequence) seq(got int64) error {
	want := s.line
	switch {
	case got == want:
		return nil
	case got == 0:
		return fmt.Errorf("seq: missing (allowed: %d: events are numbered 1, 2, 3… in file order)", want)
	case got > want:
		return fmt.Errorf("seq: %d where %d belongs: %s missing, the history has a gap (allowed: %d)", got, want, missing(want, got-1), want)
	case got == want-1:
		return fmt.Errorf("seq: %d repeated (allowed: %d, the next in file order)", got, want)
	}
	return fmt.Errorf("seq: %d out of order after %d (allowed: %d)", got, want-1, want)
}

func missing(from, to int64) string {
	if from == to {
		return fmt.Sprintf("event %d is", from)
	}
	return fmt.Sprintf("events %d to %d are", from, to)
}

func clientName(p string) string {
	if p == "" {
		return "the client without a name"
	}
	return p
}

func article(kind string) string {
	if kind == OK || kind == Info || kind == Invoke {
		return "an"
	}
	return "a"
}

// idSet is a set of op ids: a bitset for the dense ids a run hands out
// (1 to maxDenseID), a map for the rest.
type idSet struct {
	bits   []uint64
	sparse map[int64]bool
}

// maxDenseID bounds the bitset (2^26 ids: 8 MiB at most).
const maxDenseID = 1 << 26

func (s *idSet) has(id int64) bool {
	if id > 0 && id < maxDenseID {
		w := id >> 6
		return w < int64(len(s.bits)) && s.bits[w]&(1<<(id&63)) != 0
	}
	return s.sparse[id]
}

func (s *idSet) add(id int64) {
	if id > 0 && id < maxDenseID {
		w := id >> 6
		if w >= int64(len(s.bits)) {
			n := min(max(2*len(s.bits), int(w)+1), maxDenseID>>6)
			s.bits = append(s.bits, make([]uint64, n-len(s.bits))...)
		}
		s.bits[w] |= 1 << (id & 63)
		return
	}
	if s.sparse == nil {
		s.sparse = map[int64]bool{}
	}
	s.sparse[id] = true
}
