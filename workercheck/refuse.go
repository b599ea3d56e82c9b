package workercheck

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lockfault/lockfault/worker"
)

// bad is a line that breaks a rule: the worker must refuse it with an
// error naming its line number, with code (malformed unless given), and
// ending op, the new op id it carries (0: none).
type bad struct {
	text string
	cmd  string
	op   int64
	code string
	// opOptional: the line breaks a rule of its syntax or keys, so a
	// worker may refuse it before it reads the op id (lockfault's own
	// worker does); if its error carries an op id, it is the line's.
	opOptional bool
}

// optionalOp marks a bad operation line whose op id the refusal need not
// end.
func optionalOp(b bad) bad {
	b.opOptional = true
	return b
}

// badOp makes a bad operation line carrying a new op id: format has one
// %d, for the op id.
func badOp(s *session, cmd, format string) bad {
	op := s.newOp()
	return bad{text: fmt.Sprintf(format, op), cmd: cmd, op: op}
}

// refuseAll sends lines that break rule, then a barrier, and checks that
// every one was refused.
func refuseAll(s *session, rule string, lines ...bad) {
	ns := make([]int, len(lines))
	for i, b := range lines {
		ns[i] = s.send([]byte(b.text), sent{cmd: b.cmd, expect: expectRefuse, op: b.op, opOptional: b.opOptional})
	}
	s.barrier("")
	for i, b := range lines {
		code := b.code
		if code == "" {
			code = worker.CodeMalformed
		}
		s.refusal(ns[i], code, rule)
	}
}

// endpointsJSON is the JSON of server set 0's endpoints with extra
// members (`"k":v` pairs) spliced in.
func (p *probe) endpointsJSON(extra string) string {
	b, err := json.Marshal(p.srv.endpoints(p.ctx, 0))
	if err != nil {
		panic(err)
	}
	if extra == "" {
		return string(b)
	}
	return strings.TrimSuffix(string(b), "}") + "," + extra + "}"
}

// checkOneObject: a line that is not one JSON object in UTF-8 is refused.
func checkOneObject(p *probe) {
	s := p.client("c1")
	refuseAll(s, ruleOneObject,
		bad{text: `not json`},
		bad{text: `[{"cmd":"clock"}]`},
		bad{text: `"clock"`},
		bad{text: `{"cmd":"clock"`},
		bad{text: `{"cmd":"clock","offset_ms":NaN}`},
		bad{text: "{\"cmd\":\"failpoint\",\"name\":\"\xff\",\"action\":\"off\"}", cmd: "failpoint"},
	)
}

// checkTrailing: nothing may follow the object on its line.
func checkTrailing(p *probe) {
	s := p.client("c1")
	refuseAll(s, ruleTrailing,
		bad{text: `{"cmd":"clock"}{"cmd":"shutdown"}`, cmd: "clock"},
		bad{text: `{"cmd":"clock","offset_ms":0} {"cmd":"clock"}`, cmd: "clock"},
	)
}

// checkUnknownKey: a key outside its command's row, or of endpoints, or
// in another case, is refused; an operation so refused is ended.
func checkUnknownKey(p *probe) {
	s := p.client("c1")
	k := p.unique("key")
	refuseAll(s, ruleExactKeys,
		bad{text: `{"cmd":"clock","offset_ms":0,"bogus":1}`, cmd: "clock"},
		bad{text: `{"cmd":"clock","Offset_ms":0}`, cmd: "clock"},
		optionalOp(badOp(s, "acquire", `{"cmd":"acquire","op":%d,"key":"`+k+`","ttl_ms":30000,"wait_ms":0,"bogus":1}`)),
		optionalOp(badOp(s, "release", `{"cmd":"release","op":%d,"lease":"wcheck-none","key":"`+k+`"}`)),
		bad{text: `{"cmd":"endpoints","endpoints":` + p.endpointsJSON(`"bogus":"x"`) + `}`, cmd: "endpoints"},
	)
}

// checkDuplicateKey: a key given twice is refused.
func checkDuplicateKey(p *probe) {
	s := p.client("c1")
	k := p.unique("key")
	refuseAll(s, ruleDupKeys,
		bad{text: `{"cmd":"clock","offset_ms":0,"offset_ms":0}`, cmd: "clock"},
		optionalOp(badOp(s, "acquire", `{"cmd":"acquire","op":%d,"key":"`+k+`","key":"`+k+`","ttl_ms":30000}`)),
		bad{text: `{"cmd":"endpoints","endpoints":` + p.endpointsJSON(`"password":"","password":""`) + `}`, cmd: "endpoints"},
	)
}

// checkNull: null as a value is refused, in endpoints too.
func checkNull(p *probe) {
	s := p.client("c1")
	k := p.unique("key")
	refuseAll(s, ruleNull,
		bad{text: `{"cmd":"clock","offset_ms":null}`, cmd: "clock"},
		optionalOp(badOp(s, "acquire", `{"cmd":"acquire","op":%d,"key":"`+k+`","ttl_ms":30000,"wait_ms":null}`)),
		bad{text: `{"cmd":"endpoints","endpoints":` + p.endpointsJSON(`"password":null`) + `}`, cmd: "endpoints"},
	)
}

// checkLineTooLong: a line of exactly 1 MiB is read; one byte more is
// refused with an error naming its line, and reading goes on with the
// next line, numbered in step.
func checkLineTooLong(p *probe) {
	s := p.client("c1")
	pad := func(size int) []byte {
		head, tail := `{"cmd":"cut"`, `}`
		return []byte(head + strings.Repeat(" ", size-len(head)-len(tail)) + tail)
	}
	s.send(pad(worker.MaxLine), sent{cmd: "cut", expect: expectAccept, owner: p.check.ID, rule: ruleLineLength})
	long := s.send(pad(worker.MaxLine+1), sent{cmd: "cut", expect: expectRefuse})
	after := s.bad(`{"cmd":"wcheck-bogus"}`, "wcheck-bogus", 0)
	s.barrier("")
	s.refusal(long, worker.CodeMalformed, ruleLineLength)
	s.refusalOwned(after, worker.CodeNotSupported, ruleUnsupported, "unsupported/command")
}

// Keys of the workers kept between checks besides the clients: the one
// handshake/describe initialised without endpoints, one that was never
// initialised, and one whose init was refused.
const (
	keyDescribe   = "describe"
	keyPreInit    = "pre-init"
	keyFailedInit = "failed-init"
)

// checkInitFirst: every command before init is refused (an operation
// ended by its error).
func checkInitFirst(p *probe) {
	s := p.spawn("c1")
	p.keep(s, keyPreInit)
	refuseAll(s, ruleInitFirst,
		bad{text: `{"cmd":"clock","offset_ms":0}`, cmd: "clock"},
		badOp(s, "acquire", `{"cmd":"acquire","op":%d,"key":"`+p.unique("key")+`","ttl_ms":30000}`),
		bad{text: `{"cmd":"endpoints","endpoints":` + p.endpointsJSON("") + `}`, cmd: "endpoints"},
	)
}

// checkInitTwice: a second init is refused, not answered with ready.
func checkInitTwice(p *probe) {
	s := p.client("c1")
	ep := p.srv.endpoints(p.ctx, 0)
	b, _ := json.Marshal(p.initCommand("c1", &ep, true))
	n := s.bad(string(b), "init", 0)
	s.barrier("")
	if a, ok := s.answers[n]; ok && a.msg.Type == "ready" {
		x, _ := s.sentLine(n)
		p.failf(ruleInitTwice, &a, []Line{x.line()}, "a second init was answered with ready")
	}
	s.refusal(n, worker.CodeMalformed, ruleInitTwice)
}

// checkAfterFailedInit: after an init the worker refused, every command
// is refused (endpoints too: it must not build the lock), and shutdown
// still ends the worker with status 0.
func checkAfterFailedInit(p *probe) {
	s := p.take(keyFailedInit)
	if s == nil {
		s = p.spawn("describe")
		p.unknownLock(s, idUnsupLock)
	}
	k := p.unique("key")
	refuseAll(s, ruleInitFailed,
		bad{text: `{"cmd":"clock","offset_ms":0}`, cmd: "clock"},
		bad{text: `{"cmd":"endpoints","endpoints":` + p.endpointsJSON("") + `}`, cmd: "endpoints"},
		badOp(s, "acquire", `{"cmd":"acquire","op":%d,"key":"`+k+`","ttl_ms":30000}`),
	)
	if !shutdownWithin(s, ExitTimeout) {
		p.failf(ruleInitFailed, s.last, nil, "shutdown after a failed init: the worker %s %v later", s.status(), ExitTimeout)
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		p.failf(ruleInitFailed, s.last, nil, "shutdown after a failed init: the worker exited with %s, want status 0", s.status())
	}
}

// checkOpReuse: an op id used before is refused without ending anything:
// the reused release did not happen, so releasing under a new id works.
func checkOpReuse(p *probe) {
	s := p.client("c1")
	k, lease := p.unique("key"), p.unique("lease")
	op := p.mustAcquire(s, k, lease, 30000, idAcquire)
	n := s.send([]byte(fmt.Sprintf(`{"cmd":"release","op":%d,"lease":%q}`, op, lease)), sent{cmd: "release", expect: expectRefuse, reuse: op})
	s.barrier("")
	s.refusal(n, worker.CodeMalformed, ruleOpIDs)
	if m := p.release(s, lease, idRelease); m.Status != worker.StatusOK {
		p.failf(ruleOpIDs, s.last, nil, "after the refused reuse of op %d, releasing the lease under a new op id gave %s (%s): the refused line must not have released it", op, m.Status, m.Error)
	}
}

// checkUnknownCommand: a command the worker does not know is refused
// with not-supported.
func checkUnknownCommand(p *probe) {
	s := p.client("c1")
	refuseAll(s, ruleUnsupported,
		bad{text: `{"cmd":"wcheck-bogus"}`, code: worker.CodeNotSupported},
		bad{text: `{"cmd":"Clock"}`, code: worker.CodeNotSupported},
	)
}

// checkUnknownLock: an init naming a lock the worker does not run is
// refused with not-supported.
func checkUnknownLock(p *probe) {
	s := p.spawn("describe")
	p.unknownLock(s, p.check.ID)
	p.keep(s, keyFailedInit)
}

// unknownLock sends an init naming a lock no worker runs: it must be
// refused with not-supported (owner's rule).
func (p *probe) unknownLock(s *session, owner string) {
	c := p.initCommand("describe", nil, false)
	c.Lock = "wcheck-no-such-lock"
	refuseInit(p, s, c, owner)
}

// checkUnknownOption: an init with an option the lock does not know is
// refused with not-supported.
func checkUnknownOption(p *probe) {
	c := p.initCommand("describe", nil, false)
	c.Options = map[string]string{"wcheck-no-such-option": "1"}
	for k, v := range p.opts.LockOptions {
		c.Options[k] = v
	}
	refuseInit(p, p.spawn("describe"), c, p.check.ID)
}

// refuseInit sends an init the worker must refuse with not-supported
// (owner's rule).
func refuseInit(p *probe, s *session, c worker.Command, owner string) {
	b, _ := json.Marshal(c)
	n := s.bad(string(b), "init", 0)
	x, _ := s.sentLine(n)
	s.until("answer to init", InitTimeout, owner, ruleUnsupported, func() bool { _, ok := s.answers[n]; return ok }, x.line())
	if a := s.answers[n]; a.msg.Type == "ready" {
		s.fail(owner, ruleUnsupported, "init was answered with ready", &a, x.line())
	}
	s.refusalOwned(n, worker.CodeNotSupported, ruleUnsupported, owner)
}
