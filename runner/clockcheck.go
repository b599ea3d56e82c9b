package runner

import (
	"fmt"
	"time"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/worker"
)

// A client clock step proves its effect: the worker answers every `clock`
// command with the wall time its lock reads right after the step (a
// `clock` message, wall_ms), and the harness checks it against its own
// wall clock, read before the command was written and when the answer
// came. The step took effect when the reading is real time plus the
// offset asked for, and cannot be real time unmoved. The first step seen
// and the first not seen of each activation (until a step back to 0) are
// noted in the history (checker.NoteClockSeen, NoteClockUnseen); a
// clock-client fault none of whose activations was seen attacked nothing
// (checker.NotExercised).

// clockSlack covers the rounding of wall_ms to whole milliseconds.
const clockSlack = 3 * time.Millisecond

// clockSent is a clock command on its way: the offset asked, and the
// harness's wall clock just before the command was written.
type clockSent struct {
	offsetMs int64
	sent     time.Time
}

// clockState is a worker's clock commands awaiting their answers, in
// order, and which notes the current activation has had.
type clockState struct {
	queue []clockSent
	epoch int // activations: a step back to 0 ends one
	noted map[clockNote]bool
}

type clockNote struct {
	epoch int
	seen  bool
}

// clockSending records a clock command about to be written (under p.mu).
func (p *proc) clockSending(c worker.Command) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clock.queue = append(p.clock.queue, clockSent{offsetMs: c.OffsetMs, sent: time.Now()})
	if c.OffsetMs == 0 {
		p.clock.epoch++
	}
}

// clockAnswer checks a worker's `clock` message against the command it
// answers and records what it proves.
func (p *proc) clockAnswer(line int, b []byte, m worker.Message) {
	recv := time.Now()
	p.mu.Lock()
	if len(p.clock.queue) == 0 {
		p.mu.Unlock()
		p.fault(line, b, fmt.Errorf("a clock message answering no clock command"))
		return
	}
	c := p.clock.queue[0]
	p.clock.queue = p.clock.queue[1:]
	epoch := p.clock.epoch
	p.mu.Unlock()
	if m.OffsetMs != c.offsetMs {
		p.fault(line, b, fmt.Errorf("a clock message for offset_ms %d answering a clock command with offset_ms %d", m.OffsetMs, c.offsetMs))
		return
	}
	if c.offsetMs == 0 {
		return // a step back: nothing to prove
	}
	seen, detail := clockEffect(c, recv, m.WallMs)
	detail = fmt.Sprintf("%s: clock step to offset %v: %s", p.name, time.Duration(c.offsetMs)*time.Millisecond, detail)
	p.mu.Lock()
	if p.clock.noted == nil {
		p.clock.noted = map[clockNote]bool{}
	}
	k := clockNote{epoch, seen}
	dup := p.clock.noted[k]
	p.clock.noted[k] = true
	p.mu.Unlock()
	if dup || p.r == nil {
		return
	}
	op := checker.NoteClockSeen
	if !seen {
		op = checker.NoteClockUnseen
	}
	p.r.hist.Append(history.Event{Kind: history.Note, Op: op, Process: p.name, Detail: detail, Cycle: p.r.currentCycle()})
}

// clockEffect says whether a worker's reading wallMs (Unix ms), made
// between c.sent and recv on the harness's clock, shows the offset c asked
// for: it lies in that span moved by the offset, and not in the span
// unmoved.
func clockEffect(c clockSent, recv time.Time, wallMs int64) (bool, string) {
	off := time.Duration(c.offsetMs) * time.Millisecond
	read := time.UnixMilli(wallMs)
	in := func(shift time.Duration) bool {
		return !read.Before(c.sent.Add(shift-clockSlack)) && !read.After(recv.Add(shift+clockSlack))
	}
	// Where the reading is from real time: from the midpoint of the span.
	mid := c.sent.Add(recv.Sub(c.sent) / 2)
	got := read.Sub(mid).Round(time.Millisecond)
	switch {
	case in(off) && !in(0):
		return true, fmt.Sprintf("its lock's wall clock read %v from real time (seen)", got)
	case in(off):
		return false, fmt.Sprintf("its answer took %v, longer than the offset: the reading (%v from real time) cannot tell a moved clock from an unmoved one", recv.Sub(c.sent).Round(time.Millisecond), got)
	default:
		return false, fmt.Sprintf("its lock's wall clock read %v from real time, not the offset: the step did not reach the lock", got)
	}
}
