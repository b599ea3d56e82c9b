package workercheck

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/worker"
)

// failure ends a check: the rule broken, what was sent and what came back.
// owner is the check whose subject the failing step is ("" or the running
// check's own id: the check itself).
type failure struct {
	owner, rule, msg string
	sent             []Line
	got              *Line
	stderr           string
}

// skipped ends a check that cannot apply, with the reason.
type skipped struct{ reason string }

// env is what all checks of one Run share: the worker's command and
// declaration, the servers, and the workers kept between passing checks.
type env struct {
	ctx   context.Context
	argv  []string
	opts  Options
	ready worker.Message // what handshake/describe learnt
	// readyLine is the line of that ready, readyGroup the process group
	// of its pid (0: none such) and workerGroup the group of the worker
	// handshake/describe started.
	readyLine               rline
	readyGroup, workerGroup int
	srv                     *servers
	pool                    map[string]*session
	n                       int // for unique names
}

// probe is one check's view of the run: it opens sessions and fails or
// skips the check.
type probe struct {
	*env
	check    *spec
	sessions []*session
	notes    []string
}

// failf fails the check with a finding of its own (no line came back that
// shows it, or the line is given by the session).
func (p *probe) failf(rule string, got *rline, lines []Line, format string, a ...any) {
	f := &failure{rule: rule, msg: fmt.Sprintf(format, a...), sent: lines}
	if got != nil {
		f.got = got.line()
	}
	if len(p.sessions) > 0 {
		f.stderr = p.sessions[len(p.sessions)-1].stderr()
	}
	panic(f)
}

// skipf ends the check as skipped.
func (p *probe) skipf(format string, a ...any) { panic(&skipped{fmt.Sprintf(format, a...)}) }

// notef records what an ok check could not verify.
func (p *probe) notef(format string, a ...any) { p.notes = append(p.notes, fmt.Sprintf(format, a...)) }

// unique returns a name no other check of this run uses.
func (p *probe) unique(prefix string) string {
	p.n++
	return fmt.Sprintf("wcheck-%s-%d", prefix, p.n)
}

// has reports whether the worker's lock claims a capability.
func (p *probe) has(c string) bool { return slices.Contains(p.ready.Caps, c) }

// declares reports whether ready named a failpoint.
func (p *probe) declares(name string) bool { return slices.Contains(p.ready.Failpoints, name) }

// needFailpoint skips the check unless the worker declared the failpoint.
func (p *probe) needFailpoint(name string) {
	if !p.declares(name) {
		p.skipf("ready declares no failpoint %s (handshake/failpoints reports it)", name)
	}
}

// spawn starts a fresh worker for this check; it is killed when the check
// ends.
func (p *probe) spawn(name string) *session {
	pr, err := spawn(p.argv, p.opts.Stderr)
	if err != nil {
		// The command cannot be executed at all: no check can run.
		panic(runError{fmt.Errorf("worker %s: %w", strings.Join(p.argv, " "), err)})
	}
	s := newSession(p.ctx, pr, name)
	p.sessions = append(p.sessions, s)
	return s
}

// initCommand is the init of a client: describe-only without endpoints.
func (p *probe) initCommand(client string, ep *lockimpl.Endpoints, resource bool) worker.Command {
	c := worker.Command{Cmd: "init", Client: client, Lock: p.opts.Lock, Options: p.opts.LockOptions}
	if ep != nil {
		c.Endpoints = *ep
	}
	if resource {
		c.Resource = p.srv.res.Addr()
	}
	return c
}

// handshake sends init and waits for its ready; a refusal, another
// answer, silence past InitTimeout or a ready that breaks ValidateReady
// fail the check as owner's.
func (p *probe) handshake(s *session, c worker.Command, owner, rule string) worker.Message {
	n := s.command(c, owner, rule)
	x, _ := s.sentLine(n)
	s.until("answer to init", InitTimeout, owner, rule, func() bool { _, ok := s.answers[n]; return ok }, x.line())
	a := s.answers[n]
	if a.msg.Type != "ready" {
		s.fail(owner, rule, fmt.Sprintf("init was answered with %s: %s", a.msg.Type, a.msg.Error), &a, x.line())
	}
	if err := worker.ValidateReady(a.msg); err != nil {
		s.fail(idReady, ruleReady, err.Error(), &a, x.line())
	}
	if p.ready.Lock != "" && a.msg.Lock != p.ready.Lock {
		s.fail(idReady, ruleReady, fmt.Sprintf("ready names lock %q, but the describe handshake named %q", a.msg.Lock, p.ready.Lock), &a, x.line())
	}
	s.ready = a.msg
	return a.msg
}

// runInit initialises a session against server set 0 and the resource.
func (p *probe) runInit(s *session, owner, rule string) worker.Message {
	ep := p.srv.endpoints(p.ctx, 0)
	return p.handshake(s, p.initCommand(s.name, &ep, true), owner, rule)
}

// client returns a run-initialised worker for client name, kept between
// checks that pass: the one a passing check left, or a fresh one.
func (p *probe) client(name string) *session {
	if s := p.take(name); s != nil {
		return s
	}
	s := p.spawn(name)
	p.keep(s, name)
	p.runInit(s, idRun, ruleRunInit)
	return s
}

// take returns the worker a passing check kept under key, or nil.
func (p *probe) take(key string) *session {
	s := p.pool[key]
	if s == nil || s.exited() {
		return nil
	}
	if !slices.Contains(p.sessions, s) {
		p.sessions = append(p.sessions, s)
	}
	return s
}

// keep keeps a worker of this check under key for later checks, if this
// check passes.
func (p *probe) keep(s *session, key string) {
	s.pooled = key
	p.pool[key] = s
}

// settle ends a check that passed: each kept worker answers a barrier, so
// no line of this check is left for the next.
func (p *probe) settle() {
	for _, s := range p.sessions {
		if s.pooled != "" && !s.exited() {
			s.barrier("")
		}
	}
}

// closeSessions ends the check's workers: fresh ones are killed, kept ones
// too unless the check passed.
func (p *probe) closeSessions(passed bool) {
	for _, s := range p.sessions {
		if s.pooled != "" && passed && !s.exited() {
			continue
		}
		for k, x := range p.pool {
			if x == s {
				delete(p.pool, k)
			}
		}
		s.kill()
	}
}

// shutdown asks a worker to exit and reports whether it did within d,
// then kills its group.
func shutdownWithin(s *session, d time.Duration) bool {
	s.write([]byte(`{"cmd":"shutdown"}`))
	ok := s.waitExit(d)
	s.kill()
	return ok
}

// noteText joins an ok check's notes.
func (p *probe) noteText() string { return strings.Join(p.notes, "; ") }
