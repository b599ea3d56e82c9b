package workercheck

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/lockfault/lockfault/worker"
)

// The judge: the rules every conversation is held to, whatever the check.
// Each line the worker writes passes here as it is read; a line that
// breaks one of them ends the running check with a failure owned by the
// check of that rule (see resolveOwners).

// judge holds every line the worker writes to the rules all
// conversations share.
func (s *session) judge(l rline) {
	if l.err != nil {
		if !s.started && len(s.sent) > 0 && s.sent[0].cmd == "init" {
			s.fail(idDescribe, ruleStartup, fmt.Sprintf("a line before ready that is not a valid message: %v", l.err), &l)
		}
		s.fail(idMessages, ruleMessages, fmt.Sprintf("not a valid message: %v", l.err), &l)
	}
	m := l.msg
	if !s.started && len(s.sent) > 0 && s.sent[0].cmd == "init" && m.Type != "ready" && m.Type != "error" {
		s.fail(idDescribe, ruleStartup, fmt.Sprintf("a %s message before ready (the first message must answer init)", m.Type), &l)
	}
	switch m.Type {
	case "reply":
		s.ended(l)
	case "error":
		s.judgeError(l)
	case "ready":
		if len(s.inits) == 0 {
			s.fail(idDescribe, ruleStartup, "a ready that answers no init", &l)
		}
		s.answers[s.inits[0]] = l
		s.inits = s.inits[1:]
		s.started = true
	case "renew":
		if !s.granted[m.Lease] {
			s.fail(idRenew, ruleRenew, fmt.Sprintf("renew names lease %q, which the worker was never granted", m.Lease), &l)
		}
		s.renews = append(s.renews, l)
	case worker.TypeFired:
		if a, ok := s.armed[m.Name]; !ok || a != m.Action {
			s.fail(idFpOff, ruleFired, fmt.Sprintf("fired %s %s: no such failpoint is armed (armed: %v)", m.Name, m.Action, s.armed), &l)
		}
		delete(s.armed, m.Name)
		s.fired = append(s.fired, l)
	case "stopping":
		if len(s.fired) == 0 || s.fired[len(s.fired)-1].msg.Name != m.Name || s.fired[len(s.fired)-1].msg.Action != "stop" {
			s.fail(idFpStop, ruleFired, fmt.Sprintf("stopping %s without a fired %s stop before it", m.Name, m.Name), &l)
		}
		s.stopped = append(s.stopped, l)
	case worker.TypeClock:
		s.clocks = append(s.clocks, l)
	case worker.TypeInvoke:
		o := s.ops[m.Op]
		if o == nil || !o.invoke || o.inv != nil || o.end != nil {
			s.fail(idRound, ruleRound, fmt.Sprintf("invoke for op %d, which is no round step awaiting its start", m.Op), &l)
		}
		o.inv = &l
	}
}

// judgeError checks an error message: the line it names, and the op it
// ends.
func (s *session) judgeError(l rline) {
	m := l.msg
	x, ok := s.sentLine(m.Line)
	if !ok {
		s.fail(idMessages, ruleErrorLine, fmt.Sprintf("an error naming stdin line %d, but %d lines were sent", m.Line, len(s.sent)), &l)
	}
	if x.expect == expectRefuse && m.Op != 0 && m.Op != x.op {
		s.fail("", ruleOpIDs, fmt.Sprintf("the error refusing line %d carries op %d, which is not a new op id of that line (a reused id is refused without ending anything)", x.n, m.Op), &l, x.line())
	}
	if m.Op != 0 {
		s.ended(l)
	}
	if x.cmd == "init" && len(s.inits) > 0 && s.inits[0] == x.n {
		s.answers[x.n] = l
		s.inits = s.inits[1:]
	}
	if x.expect == expectAccept {
		s.fail(x.owner, x.rule, fmt.Sprintf("the worker refused line %d, a valid %s: %s", x.n, x.cmd, m.Error), &l, x.line())
	}
	if _, dup := s.lineErr[x.n]; dup {
		s.fail(idMessages, ruleErrorLine, fmt.Sprintf("a second error for stdin line %d", x.n), &l, x.line())
	}
	s.lineErr[x.n] = l
}

// ended records the reply or error that ends an op: it must be an op the
// harness sent and that has no answer yet, and a reply comes after the
// answers to every operation queued before it.
func (s *session) ended(l rline) {
	m := l.msg
	o := s.ops[m.Op]
	switch {
	case o == nil:
		s.fail(idOneReply, ruleOneReply, fmt.Sprintf("a %s for op %d, which was never sent", m.Type, m.Op), &l)
	case o.end != nil && !bytes.Equal(l.text, o.end.text) && s.reusedAfter(m.Op, o.line) != nil:
		x := s.reusedAfter(m.Op, o.line)
		s.fail("", ruleOpIDs, fmt.Sprintf("line %d reused op id %d and was answered (%s) instead of refused", x.n, m.Op, m.Type), &l, x.line())
	case o.end != nil:
		s.fail(idOneReply, ruleOneReply, fmt.Sprintf("a second answer (%s) to op %d, already answered on stdout line %d", m.Type, m.Op, o.end.n), &l, s.sent[o.line-1].line())
	case o.invoke && o.inv == nil && m.Type == "reply":
		s.fail(idRound, ruleRound, fmt.Sprintf("reply to round step op %d without its invoke first", m.Op), &l)
	}
	if m.Type == "reply" {
		ids := make([]int64, 0, len(s.ops))
		for id, p := range s.ops {
			if p.queued && p.end == nil && p.seq < o.seq {
				ids = append(ids, id)
			}
		}
		if len(ids) > 0 {
			slices.Sort(ids)
			s.fail(idOneReply, ruleOneReply, fmt.Sprintf("reply to op %d while op %d, sent before it, has no answer", m.Op, ids[0]), &l, s.sent[s.ops[ids[0]].line-1].line())
		}
		if m.Status == worker.StatusOK && o.lease != "" {
			s.granted[o.lease] = true
		}
	}
	o.end = &l
}

// reusedAfter returns the line after line n that reused op id op, if any.
func (s *session) reusedAfter(op int64, n int) *sent {
	for i := n; i < len(s.sent); i++ {
		if s.sent[i].reuse == op {
			return &s.sent[i]
		}
	}
	return nil
}
