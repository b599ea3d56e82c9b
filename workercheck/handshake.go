package workercheck

import (
	"github.com/lockfault/lockfault/internal/procwatch"
	"github.com/lockfault/lockfault/worker"
)

// checkDescribe: init without endpoints is answered with one line, ready,
// first and within InitTimeout; nothing else follows it unasked. The init
// names the resource, so control/endpoints can build the lock of this
// worker later.
func checkDescribe(p *probe) {
	s := p.spawn("describe")
	p.keep(s, keyDescribe)
	n := s.command(p.initCommand("describe", nil, true), idDescribe, ruleStartup)
	x, _ := s.sentLine(n)
	s.until("answer to init", InitTimeout, idDescribe, ruleStartup, func() bool { _, ok := s.answers[n]; return ok }, x.line())
	a := s.answers[n]
	if a.msg.Type != "ready" {
		p.failf(ruleStartup, &a, []Line{x.line()}, "init was answered with %s: %s", a.msg.Type, a.msg.Error)
	}
	p.ready, p.readyLine, p.workerGroup = a.msg, a, s.pid
	p.readyGroup, _ = procwatch.Group(a.msg.Pid)
	// The describe-only worker answers an operation with a refusal (no
	// lock is built), and writes nothing else.
	s.barrier(idDescribe)
}

// checkReadyFields: the ready of handshake/describe declares a valid lock
// (worker.ValidateReady), the lock init asked for, and the pid of a
// process in the worker's own process group.
func checkReadyFields(p *probe) {
	m, a := p.ready, p.readyLine
	if err := worker.ValidateReady(m); err != nil {
		p.failf(ruleReady, &a, nil, "%v", err)
	}
	if p.opts.Lock != "" && m.Lock != p.opts.Lock {
		p.failf(ruleReady, &a, nil, "ready names lock %q, but init asked for %q", m.Lock, p.opts.Lock)
	}
	if m.Pid <= 0 {
		p.failf(ruleReady, &a, nil, "ready carries no pid")
	}
	if p.readyGroup != p.workerGroup {
		p.failf(ruleReady, &a, nil, "ready's pid %d is not a process of the worker's own process group %d", m.Pid, p.workerGroup)
	}
}

// checkRun: init with endpoints and the resource builds the lock and is
// answered with ready.
func checkRun(p *probe) {
	p.client("c1")
}

// checkFailpoints: ready declares the failpoints every worker should hit,
// and each declared failpoint can be armed and disarmed.
func checkFailpoints(p *probe) {
	var missing []string
	for _, f := range worker.WorkerFailpoints {
		if !p.declares(f) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		p.failf(ruleFailpoints, nil, nil, "ready does not declare %v (declared: %v)", missing, p.ready.Failpoints)
	}
	s := p.client("c1")
	for _, f := range p.ready.Failpoints {
		s.arm(f, "crash", 1_000_000, 0, idFpDeclared, ruleFailpoints)
		s.arm(f, "off", 0, 0, idFpDeclared, ruleFailpoints)
	}
	s.barrier("")
}
