package workercheck

import (
	"time"

	"github.com/lockfault/lockfault/worker"
)

// checkShutdown: shutdown, with the lock built and a grant held, ends the
// worker with status 0, and it writes nothing in answer.
func checkShutdown(p *probe) {
	s := p.client("c1")
	p.mustAcquire(s, p.unique("key"), p.unique("lease"), grantTTL, idAcquire)
	s.barrier("")
	exitsZero(p, s)
}

// checkShutdownFirst: shutdown is allowed before init too.
func checkShutdownFirst(p *probe) {
	s := p.take(keyPreInit)
	if s == nil {
		s = p.spawn("c1")
	}
	exitsZero(p, s)
}

// exitsZero sends shutdown and requires exit status 0 within ExitTimeout
// and no line in answer.
func exitsZero(p *probe, s *session) {
	n := s.command(worker.Command{Cmd: "shutdown"}, p.check.ID, ruleShutdown)
	x, _ := s.sentLine(n)
	if !s.waitExit(ExitTimeout) {
		p.failf(ruleShutdown, s.last, []Line{x.line()}, "the worker still runs %v after shutdown", ExitTimeout)
	}
	if !s.cmd.ProcessState.Exited() || s.cmd.ProcessState.ExitCode() != 0 {
		p.failf(ruleShutdown, s.last, []Line{x.line()}, "after shutdown the worker %s, want exit status 0", s.status())
	}
	seen := s.last
	s.drain(time.Second)
	if s.last != seen {
		p.failf(ruleShutdown, s.last, []Line{x.line()}, "the worker answered shutdown with a line")
	}
}
