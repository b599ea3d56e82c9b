package workercheck

import (
	"fmt"
	"strings"

	"github.com/lockfault/lockfault/worker"
)

// checkOpBounds: op ids outside 1 .. 2^53-1, fractions and strings are
// refused (ending nothing: they are no op ids); 2^53-1 itself is one.
func checkOpBounds(p *probe) {
	s := p.client("c1")
	var lines []bad
	for _, op := range []string{"0", "-1", "9007199254740992", "1.5", `"7"`, "true"} {
		lines = append(lines, bad{text: `{"cmd":"release","op":` + op + `,"lease":"wcheck-none"}`, cmd: "release"})
	}
	refuseAll(s, ruleOpIDs, lines...)
	// The largest op id is accepted: an answer ends it.
	s.op(worker.Command{Cmd: "release", Op: worker.MaxOp, Lease: "wcheck-none"}, p.check.ID, ruleOpIDs)
	s.end(worker.MaxOp, p.check.ID, ruleOpIDs, ReplyTimeout)
}

// checkTTLBounds: ttl_ms outside 1 .. 3600000, a fraction or a string is
// refused (acquire and extend); both ends of the range are accepted.
func checkTTLBounds(p *probe) {
	s := p.client("c1")
	var lines []bad
	for _, v := range []string{"0", "-1", "3600001", "1.5", `"1000"`, "true"} {
		lines = append(lines, badOp(s, "acquire", `{"cmd":"acquire","op":%d,"key":"`+p.unique("key")+`","ttl_ms":`+v+`}`))
	}
	for _, v := range []string{"0", "3600001", "2.5"} {
		lines = append(lines, badOp(s, "extend", `{"cmd":"extend","op":%d,"lease":"wcheck-none","ttl_ms":`+v+`}`))
	}
	refuseAll(s, ruleBounds, lines...)
	p.acquire(s, p.unique("key"), p.unique("lease"), 1, 0, p.check.ID)
	lease := p.unique("lease")
	p.mustAcquire(s, p.unique("key"), lease, worker.MaxTTLMs, p.check.ID)
	p.release(s, lease, idRelease)
}

// checkWaitBounds: wait_ms outside 0 .. 3600000 or a fraction is refused;
// 3600000 on a free lock is accepted.
func checkWaitBounds(p *probe) {
	s := p.client("c1")
	var lines []bad
	for _, v := range []string{"-1", "3600001", "2.5", `"0"`} {
		lines = append(lines, badOp(s, "acquire", `{"cmd":"acquire","op":%d,"key":"`+p.unique("key")+`","ttl_ms":30000,"wait_ms":`+v+`}`))
	}
	refuseAll(s, ruleBounds, lines...)
	lease := p.unique("lease")
	p.mustAcquireWait(s, p.unique("key"), lease, 30000, worker.MaxWaitMs, p.check.ID)
	p.release(s, lease, idRelease)
}

// checkHoldBounds: hold_ms and write_if_valid_ms outside 0 .. 3600000 or
// fractions are refused; a hold of 0 is accepted.
func checkHoldBounds(p *probe) {
	s := p.client("c1")
	var lines []bad
	for _, v := range []string{"-1", "3600001", "0.5", `"10"`} {
		lines = append(lines, badOp(s, "cs", `{"cmd":"cs","op":%d,"lease":"wcheck-none","hold_ms":`+v+`}`))
	}
	for _, v := range []string{"-1", "3600001"} {
		lines = append(lines, badOp(s, "cs", `{"cmd":"cs","op":%d,"lease":"wcheck-none","hold_ms":0,"write_if_valid_ms":`+v+`}`))
	}
	refuseAll(s, ruleBounds, lines...)
	lease := p.unique("lease")
	p.mustAcquire(s, p.unique("key"), lease, 30000, idAcquire)
	p.cs(s, lease, 0, p.check.ID)
	p.release(s, lease, idRelease)
}

// checkFailpointBounds: failpoint count outside 0 .. 1000000, ms outside
// 0 .. 3600000, fractions and an unknown action are refused as malformed;
// the largest count and ms are accepted.
func checkFailpointBounds(p *probe) {
	s := p.client("c1")
	name := "cs-before-write"
	if !p.declares(name) && len(p.ready.Failpoints) > 0 {
		name = p.ready.Failpoints[0]
	}
	fp := func(rest string) bad {
		return bad{text: fmt.Sprintf(`{"cmd":"failpoint","name":%q,%s}`, name, rest), cmd: "failpoint"}
	}
	refuseAll(s, ruleBounds,
		fp(`"action":"sleep","count":-1`),
		fp(`"action":"sleep","count":1000001`),
		fp(`"action":"sleep","count":1.5`),
		fp(`"action":"sleep","ms":-1`),
		fp(`"action":"sleep","ms":3600001`),
		fp(`"action":"sleep","ms":"5"`),
		fp(`"action":"explode"`),
	)
	if !p.declares(name) {
		p.skipf("ready declares no failpoint, so the accepted ends of the ranges cannot be tried (handshake/failpoints reports it)")
	}
	s.arm(name, "sleep", worker.MaxFailpointCount, worker.MaxFailpointMs, p.check.ID, ruleBounds)
	s.arm(name, "off", 0, 0, p.check.ID, ruleBounds)
}

// checkOffsetBounds: offset_ms outside ±31622400000, fractions and
// strings are refused; both ends are accepted.
func checkOffsetBounds(p *probe) {
	s := p.client("c1")
	var lines []bad
	for _, v := range []string{"31622400001", "-31622400001", "0.5", `"0"`} {
		lines = append(lines, bad{text: `{"cmd":"clock","offset_ms":` + v + `}`, cmd: "clock"})
	}
	refuseAll(s, ruleBounds, lines...)
	for _, v := range []int64{worker.MaxOffsetMs, -worker.MaxOffsetMs, 0} {
		s.command(worker.Command{Cmd: "clock", OffsetMs: v}, idClock, ruleClock)
	}
}

// checkStrings: an empty string or one over 4096 bytes is refused; 4096
// bytes are accepted.
func checkStrings(p *probe) {
	s := p.client("c1")
	long := strings.Repeat("k", 4097)
	refuseAll(s, ruleStrings,
		badOp(s, "acquire", `{"cmd":"acquire","op":%d,"key":"","ttl_ms":30000}`),
		badOp(s, "acquire", `{"cmd":"acquire","op":%d,"key":"`+long+`","ttl_ms":30000}`),
		badOp(s, "acquire", `{"cmd":"acquire","op":%d,"key":"`+p.unique("key")+`","lease":"","ttl_ms":30000}`),
		badOp(s, "release", `{"cmd":"release","op":%d,"lease":""}`),
		bad{text: `{"cmd":"failpoint","name":"` + long + `","action":"off"}`, cmd: "failpoint"},
	)
	lease := p.unique("lease")
	key := p.unique("key")
	p.mustAcquire(s, key+strings.Repeat("k", 4096-len(key)), lease, 30000, p.check.ID)
	p.release(s, lease, idRelease)
}

// checkRequired: a command without a field it needs is refused.
func checkRequired(p *probe) {
	s := p.client("c1")
	k := p.unique("key")
	refuseAll(s, ruleRequired,
		bad{text: `{"op":1}`},
		badOp(s, "acquire", `{"cmd":"acquire","op":%d,"ttl_ms":30000}`),
		badOp(s, "acquire", `{"cmd":"acquire","op":%d,"key":"`+k+`"}`),
		bad{text: `{"cmd":"acquire","key":"` + k + `","ttl_ms":30000}`, cmd: "acquire"},
		badOp(s, "cs", `{"cmd":"cs","op":%d,"hold_ms":0}`),
		badOp(s, "release", `{"cmd":"release","op":%d}`),
		badOp(s, "extend", `{"cmd":"extend","op":%d,"lease":"wcheck-none"}`),
		bad{text: `{"cmd":"failpoint","action":"off"}`, cmd: "failpoint"},
		bad{text: `{"cmd":"failpoint","name":"cs-before-write"}`, cmd: "failpoint"},
		bad{text: `{"cmd":"endpoints"}`, cmd: "endpoints"},
	)
}
