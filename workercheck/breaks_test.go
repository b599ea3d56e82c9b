package workercheck

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/worker"
)

// brk is one way to break the built-in worker: target is the one check it
// must fail; in edits a real stdin line n into the lines the worker gets
// (none: it never sees it); out edits a message into the lines written
// (none: dropped); start runs before anything.
type brk struct {
	target string
	lock   string // the lock it runs ("": single), for a break of a lock's own
	in     func(b *broken, n int, v view) [][]byte
	out    func(b *broken, m *worker.Message) [][]byte
	start  func(b *broken)
}

// pass is the line unchanged; drop is none.
func pass(v view) [][]byte { return [][]byte{v.raw} }

var drop [][]byte

// silentIf drops the worker's error for every line pred selects: the
// worker silently ignores such lines.
func silentIf(pred func(v view) bool) func(b *broken, n int, v view) [][]byte {
	return func(b *broken, n int, v view) [][]byte {
		if pred(v) {
			b.mu.Lock()
			b.silent[n] = true
			b.mu.Unlock()
		}
		return pass(v)
	}
}

// integer returns a JSON number that is an integer.
func integer(raw json.RawMessage) (int64, bool) {
	s := string(raw)
	if strings.ContainsAny(s, `."eE`) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// outside reports whether a view carries key and it is not an integer in
// lo .. hi.
func outside(v view, key string, lo, hi int64) bool {
	raw, ok := v.obj[key]
	if !ok || string(raw) == "null" {
		return false
	}
	n, ok := integer(raw)
	return !ok || n < lo || n > hi
}

// editObj applies f to the top-level object and to the endpoints object
// (nested); the line is re-encoded when f reports a change.
func editObj(v view, f func(m map[string]json.RawMessage, nested bool) bool) []byte {
	if v.obj == nil {
		return v.raw
	}
	changed := f(v.obj, false)
	if ep, ok := v.obj["endpoints"]; ok {
		var e map[string]json.RawMessage
		if json.Unmarshal(ep, &e) == nil && e != nil && f(e, true) {
			v.obj["endpoints"], _ = json.Marshal(e)
			changed = true
		}
	}
	if !changed {
		return v.raw
	}
	return v.encode()
}

// hasDuplicate reports whether a JSON object, or one nested in it,
// repeats a key.
func hasDuplicate(b []byte) bool {
	type frame struct {
		obj     bool
		keys    map[string]bool
		wantKey bool
	}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, &frame{obj: t == '{', keys: map[string]bool{}, wantKey: true})
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top := len(stack) - 1; top >= 0 && stack[top].obj && stack[top].wantKey {
				if stack[top].keys[t] {
					return true
				}
				stack[top].keys[t], stack[top].wantKey = true, false
				continue
			}
		}
		// A value ended: its object wants a key next.
		if top := len(stack) - 1; top >= 0 && stack[top].obj {
			stack[top].wantKey = true
		}
	}
}

var endpointKeys = []string{"primary", "sentinels", "master", "masters", "etcd", "password"}

// breaks are the broken workers: each breaks one rule, and must fail
// exactly its target check.
var breaks = map[string]*brk{
	// Start-up.
	"line-before-ready": {target: idDescribe, start: func(b *broken) { os.Stdout.Write([]byte("worker starting\n")) }},
	"ready-unknown-cap": {target: idReady, out: func(b *broken, m *worker.Message) [][]byte {
		if m.Type == "ready" {
			m.Caps = append(m.Caps, "teleport")
		}
		return [][]byte{enc(*m)}
	}},
	"run-init-refused": {target: idRun, out: func(b *broken, m *worker.Message) [][]byte {
		if m.Type == "ready" && b.lastInitEP() {
			last := 0
			for n := range b.initLines {
				last = max(last, n)
			}
			return [][]byte{enc(worker.Message{Type: "error", Line: last, Code: worker.CodeNotSupported, Error: "cannot reach the servers"})}
		}
		return [][]byte{enc(*m)}
	}},
	"refuse-declared-failpoint": {target: idFpDeclared, in: func(b *broken, n int, v view) [][]byte {
		if v.valid && v.c.Cmd == "failpoint" && v.c.Name == "after-extend" {
			v.obj["name"] = json.RawMessage(`"wcheck-undeclared"`)
			return [][]byte{v.encode()}
		}
		return pass(v)
	}},

	// Rules of the line.
	"accept-not-utf8": {target: "rules/one-object", in: func(b *broken, n int, v view) [][]byte {
		if !utf8.Valid(v.raw) {
			return [][]byte{bytes.ToValidUTF8(v.raw, []byte("?"))}
		}
		return pass(v)
	}},
	"accept-trailing-data": {target: "rules/trailing-data", in: func(b *broken, n int, v view) [][]byte {
		dec := json.NewDecoder(bytes.NewReader(v.raw))
		var first json.RawMessage
		if dec.Decode(&first) == nil && len(bytes.TrimSpace(v.raw[dec.InputOffset():])) > 0 {
			return [][]byte{first}
		}
		return pass(v)
	}},
	"accept-unknown-key": {target: "rules/unknown-key", in: func(b *broken, n int, v view) [][]byte {
		allowed, ok := worker.Commands[v.cmd]
		if !ok {
			return pass(v)
		}
		return [][]byte{editObj(v, func(m map[string]json.RawMessage, nested bool) bool {
			changed := false
			for k := range m {
				if nested && !slices.Contains(endpointKeys, k) || !nested && k != "cmd" && !slices.Contains(allowed, k) {
					delete(m, k)
					changed = true
				}
			}
			return changed
		})}
	}},
	"accept-duplicate-key": {target: "rules/duplicate-key", in: func(b *broken, n int, v view) [][]byte {
		if v.obj != nil && hasDuplicate(v.raw) {
			return [][]byte{v.encode()}
		}
		return pass(v)
	}},
	"accept-null": {target: "rules/null-value", in: func(b *broken, n int, v view) [][]byte {
		return [][]byte{editObj(v, func(m map[string]json.RawMessage, _ bool) bool {
			changed := false
			for k, x := range m {
				if string(x) == "null" {
					delete(m, k)
					changed = true
				}
			}
			return changed
		})}
	}},
	"accept-long-line": {target: "rules/line-too-long", in: func(b *broken, n int, v view) [][]byte {
		if len(v.raw) > worker.MaxLine {
			var c bytes.Buffer
			if json.Compact(&c, v.raw) == nil {
				return [][]byte{c.Bytes()}
			}
		}
		return pass(v)
	}},

	// Order of commands.
	"no-error-before-init": {target: "rules/init-first", in: func(b *broken, n int, v view) [][]byte {
		b.mu.Lock()
		if len(b.initLines) == 0 {
			b.silent[n] = true
		}
		b.mu.Unlock()
		return pass(v)
	}},
	"accept-second-init": {target: "rules/init-twice", in: func(b *broken, n int, v view) [][]byte {
		b.mu.Lock()
		defer b.mu.Unlock()
		if v.valid && v.c.Cmd == "init" && b.readySeen {
			b.write(b.readyRaw)
			return drop
		}
		return pass(v)
	}},
	"accept-after-failed-init": {target: "rules/after-failed-init", out: func(b *broken, m *worker.Message) [][]byte {
		if m.Type == "error" && b.failed && !b.initLines[m.Line] && m.Op == 0 {
			return drop
		}
		return [][]byte{enc(*m)}
	}},
	"accept-op-reuse": {target: "rules/op-reuse", in: func(b *broken, n int, v view) [][]byte {
		b.mu.Lock()
		defer b.mu.Unlock()
		if v.isOp() && b.seenOps[v.c.Op] {
			b.nextFake++
			b.remap[b.nextFake] = v.c.Op
			v.obj["op"] = json.RawMessage(strconv.FormatInt(b.nextFake, 10))
			return [][]byte{v.encode()}
		}
		return pass(v)
	}},

	// Bounds, strings, required fields, unknown commands: the worker
	// silently ignores a line that breaks them.
	"silent-op-bounds": {target: "rules/bounds/op", in: silentIf(func(v view) bool { return outside(v, "op", 1, worker.MaxOp) })},
	"accept-ttl-out-of-range": {target: "rules/bounds/ttl_ms", in: func(b *broken, n int, v view) [][]byte {
		if t, ok := integer(v.obj["ttl_ms"]); ok && (t < 1 || t > worker.MaxTTLMs) {
			v.obj["ttl_ms"] = json.RawMessage(strconv.FormatInt(min(max(t, 1), worker.MaxTTLMs), 10))
			return [][]byte{v.encode()}
		}
		return pass(v)
	}},
	"silent-wait-bounds": {target: "rules/bounds/wait_ms", in: silentIf(func(v view) bool { return outside(v, "wait_ms", 0, worker.MaxWaitMs) })},
	"silent-hold-bounds": {target: "rules/bounds/hold_ms", in: silentIf(func(v view) bool {
		return outside(v, "hold_ms", 0, worker.MaxHoldMs) || outside(v, "write_if_valid_ms", 0, worker.MaxHoldMs)
	})},
	"silent-failpoint-bounds": {target: "rules/bounds/failpoint", in: silentIf(func(v view) bool {
		var action string
		_, hasAction := v.obj["action"]
		json.Unmarshal(v.obj["action"], &action)
		return v.cmd == "failpoint" && (outside(v, "count", 0, worker.MaxFailpointCount) || outside(v, "ms", 0, worker.MaxFailpointMs) ||
			hasAction && !slices.Contains([]string{"crash", "sleep", "stop", "off"}, action))
	})},
	"silent-offset-bounds": {target: "rules/bounds/offset_ms", in: silentIf(func(v view) bool {
		return outside(v, "offset_ms", -worker.MaxOffsetMs, worker.MaxOffsetMs)
	})},
	"silent-strings": {target: "rules/bounds/strings", in: silentIf(func(v view) bool {
		for _, x := range v.obj {
			var s string
			if string(x) != "null" && json.Unmarshal(x, &s) == nil && (s == "" || len(s) > 4096) {
				return true
			}
		}
		return false
	})},
	"silent-required": {target: "rules/required", in: silentIf(func(v view) bool {
		need := map[string][]string{"acquire": {"op", "key", "ttl_ms"}, "cs": {"op", "lease"}, "release": {"op", "lease"},
			"extend": {"op", "lease", "ttl_ms"}, "failpoint": {"name", "action"}, "endpoints": {"endpoints"}}
		if v.obj == nil {
			return false
		}
		if _, ok := v.obj["cmd"]; !ok {
			return true
		}
		for _, k := range need[v.cmd] {
			if _, ok := v.obj[k]; !ok {
				return true
			}
		}
		return false
	})},
	"silent-unknown-command": {target: "unsupported/command", in: silentIf(func(v view) bool {
		_, known := worker.Commands[v.cmd]
		return v.obj != nil && v.cmd != "" && !known
	})},
	"accept-any-lock": {target: idUnsupLock, in: func(b *broken, n int, v view) [][]byte {
		if v.valid && v.c.Cmd == "init" && v.c.Lock == "wcheck-no-such-lock" {
			v.obj["lock"] = json.RawMessage(`"single"`)
			return [][]byte{v.encode()}
		}
		return pass(v)
	}},
	"accept-any-option": {target: idUnsupOption, in: func(b *broken, n int, v view) [][]byte {
		info, ok := lockimpl.Lookup(v.c.Lock)
		if !v.valid || v.c.Cmd != "init" || !ok || len(v.c.Options) == 0 {
			return pass(v)
		}
		opts := map[string]string{}
		for k, x := range v.c.Options {
			if slices.Contains(info.Options, k) {
				opts[k] = x
			}
		}
		v.obj["options"], _ = json.Marshal(opts)
		return [][]byte{v.encode()}
	}},

	// Messages and replies.
	"reply-unknown-key": {target: idMessages, out: func(b *broken, m *worker.Message) [][]byte {
		raw := enc(*m)
		if m.Type == "reply" {
			raw = append(raw[:len(raw)-1], []byte(`,"elapsed_ms":1}`)...)
		}
		return [][]byte{raw}
	}},
	"drop-cs-reply": {target: idOneReply, out: func(b *broken, m *worker.Message) [][]byte {
		if m.Type == "reply" && b.opCmd[m.Op] == "cs" {
			return drop
		}
		return [][]byte{enc(*m)}
	}},
	"reply-twice": {target: idOneReply, out: func(b *broken, m *worker.Message) [][]byte {
		if m.Type == "reply" {
			return [][]byte{enc(*m), enc(*m)}
		}
		return [][]byte{enc(*m)}
	}},
	"wrong-op-id": {target: idOneReply, out: func(b *broken, m *worker.Message) [][]byte {
		if m.Type == "reply" {
			m.Op += 1 << 40
		}
		return [][]byte{enc(*m)}
	}},

	// Operations.
	"grant-when-taken": {target: idAcquire, out: func(b *broken, m *worker.Message) [][]byte {
		if m.Type == "reply" && b.opCmd[m.Op] == "acquire" && m.Status == worker.StatusFail {
			m.Status, m.Error = worker.StatusOK, ""
		}
		return [][]byte{enc(*m)}
	}},
	"ignore-wait": {target: "ops/acquire-wait", in: func(b *broken, n int, v view) [][]byte {
		if v.valid && v.c.Cmd == "acquire" && v.c.WaitMs > 0 {
			delete(v.obj, "wait_ms")
			return [][]byte{v.encode()}
		}
		return pass(v)
	}},
	"cs-wrong-wrote": {target: idCS, out: func(b *broken, m *worker.Message) [][]byte {
		if m.Type == "reply" && b.opCmd[m.Op] == "cs" && m.Wrote != nil {
			m.Wrote = history.Int64(*m.Wrote + 1)
		}
		return [][]byte{enc(*m)}
	}},
	"release-noop": {target: idRelease, in: func(b *broken, n int, v view) [][]byte {
		b.mu.Lock()
		defer b.mu.Unlock()
		if v.valid && v.c.Cmd == "release" && !strings.HasPrefix(v.c.Lease, "wcheck-barrier") && !b.seenOps[v.c.Op] {
			b.seenOps[v.c.Op] = true
			b.fake(worker.Message{Type: "reply", Op: v.c.Op, Status: worker.StatusOK})
			return drop
		}
		return pass(v)
	}},
	"extend-noop": {target: idExtend, in: func(b *broken, n int, v view) [][]byte {
		b.mu.Lock()
		defer b.mu.Unlock()
		if v.valid && v.c.Cmd == "extend" && b.held[v.c.Lease] && !b.seenOps[v.c.Op] {
			b.seenOps[v.c.Op] = true
			b.fake(worker.Message{Type: "reply", Op: v.c.Op, Status: worker.StatusOK, ValidityMs: v.c.TTLMs, ValidUntil: history.Now() + v.c.TTLMs*1e6})
			return drop
		}
		return pass(v)
	}},
	"extend-old-ok": {target: "ops/extend-old-lease", out: func(b *broken, m *worker.Message) [][]byte {
		if m.Type == "reply" && b.opCmd[m.Op] == "extend" && m.Status == worker.StatusFail && m.Code == "" {
			m.Status, m.Error = worker.StatusOK, ""
		}
		return [][]byte{enc(*m)}
	}},
	// A lock, not the worker, broken: del-release deletes the key
	// whoever holds it.
	"lock-del-release": {target: "ops/release-old-lease", lock: "del-release"},
	"extend-drop-code": {target: idExtend, lock: "get-del-release", out: func(b *broken, m *worker.Message) [][]byte {
		if m.Type == "reply" && b.opCmd[m.Op] == "extend" {
			m.Code = ""
		}
		return [][]byte{enc(*m)}
	}},
	"valid-until-past": {target: "ops/valid-until-in-range", out: func(b *broken, m *worker.Message) [][]byte {
		if m.Type == "reply" && m.ValidUntil != 0 {
			m.ValidUntil = history.Now() - 1e9
		}
		return [][]byte{enc(*m)}
	}},
	"round-no-invoke": {target: idRound, out: func(b *broken, m *worker.Message) [][]byte {
		if m.Type == worker.TypeInvoke {
			return drop
		}
		return [][]byte{enc(*m)}
	}},
	"renew-ghost": {target: idRenew, out: func(b *broken, m *worker.Message) [][]byte {
		out := [][]byte{enc(*m)}
		if m.Type == "reply" && b.opCmd[m.Op] == "acquire" && m.Status == worker.StatusOK {
			out = append(out, enc(worker.Message{Type: "renew", Lease: "ghost-" + b.opLease[m.Op], ValidityMs: 1000, ValidUntil: history.Now() + 1e9}))
		}
		return out
	}},

	// Control commands.
	"accept-unknown-failpoint": {target: idFpUnknown, out: func(b *broken, m *worker.Message) [][]byte {
		if m.Type == "error" && m.Code == worker.CodeNotSupported && m.Name != "" {
			return drop
		}
		return [][]byte{enc(*m)}
	}},
	"ignore-crash-failpoint": {target: "control/failpoint-crash", in: func(b *broken, n int, v view) [][]byte {
		b.mu.Lock()
		defer b.mu.Unlock()
		if v.valid && v.c.Cmd == "failpoint" && v.c.Action == "crash" && b.declares(v.c.Name) {
			return drop
		}
		return pass(v)
	}},
	"stop-no-stop": {target: idFpStop, in: func(b *broken, n int, v view) [][]byte {
		if v.valid && v.c.Cmd == "failpoint" && v.c.Action == "stop" {
			b.mu.Lock()
			b.stopMs[v.c.Name] = v.c.Ms
			b.mu.Unlock()
			v.obj["action"], v.obj["ms"] = json.RawMessage(`"sleep"`), json.RawMessage(`0`)
			return [][]byte{v.encode()}
		}
		return pass(v)
	}, out: func(b *broken, m *worker.Message) [][]byte {
		if ms, ok := b.stopMs[m.Name]; ok && m.Type == worker.TypeFired {
			delete(b.stopMs, m.Name)
			return [][]byte{enc(worker.Message{Type: worker.TypeFired, Name: m.Name, Action: "stop"}), enc(worker.Message{Type: "stopping", Name: m.Name, Ms: ms})}
		}
		return [][]byte{enc(*m)}
	}},
	"sleep-no-sleep": {target: "control/failpoint-sleep", in: func(b *broken, n int, v view) [][]byte {
		if v.valid && v.c.Cmd == "failpoint" && v.c.Action == "sleep" && v.c.Ms > 0 {
			delete(v.obj, "ms")
			return [][]byte{v.encode()}
		}
		return pass(v)
	}},
	"count-ignored": {target: "control/failpoint-count", in: func(b *broken, n int, v view) [][]byte {
		if v.valid && v.c.Cmd == "failpoint" && v.c.Count > 1 {
			delete(v.obj, "count")
			return [][]byte{v.encode()}
		}
		return pass(v)
	}},
	"off-ignored": {target: idFpOff, in: func(b *broken, n int, v view) [][]byte {
		if v.valid && v.c.Cmd == "failpoint" && v.c.Action == "off" {
			return drop
		}
		return pass(v)
	}},
	"refuse-clock": {target: idClock, in: func(b *broken, n int, v view) [][]byte {
		b.mu.Lock()
		defer b.mu.Unlock()
		if v.valid && v.c.Cmd == "clock" && b.readySeen {
			b.write(enc(worker.Message{Type: "error", Line: n, Code: worker.CodeNotSupported, Error: "this worker has no clock"}))
			return drop
		}
		return pass(v)
	}},
	"cut-latches": {target: idCut, in: func(b *broken, n int, v view) [][]byte {
		b.mu.Lock()
		defer b.mu.Unlock()
		if v.valid && v.c.Cmd == "cut" {
			busy := false
			for op := range b.inflight {
				busy = busy || b.opCmd[op] == "cs"
			}
			if !busy {
				b.latched = true
				return drop
			}
		}
		if v.valid && v.c.Cmd == "cs" && b.latched {
			b.latched = false
			b.keepCutting(n, v.c.Op)
		}
		return pass(v)
	}},
	// Allowed: a worker may ignore cut (TestCutIgnoredIsSkipped).
	"ignore-cut": {target: "", in: func(b *broken, n int, v view) [][]byte {
		if v.valid && v.c.Cmd == "cut" {
			return drop
		}
		return pass(v)
	}},
	"serial-control": {target: "control/at-once", in: func(b *broken, n int, v view) [][]byte {
		switch v.cmd {
		case "failpoint", "clock", "cut", "endpoints":
			b.waitIdle()
		}
		return pass(v)
	}},
	"ignore-repoint": {target: idEndpoints, in: func(b *broken, n int, v view) [][]byte {
		b.mu.Lock()
		defer b.mu.Unlock()
		if v.valid && v.c.Cmd == "endpoints" && b.built {
			return drop
		}
		return pass(v)
	}},

	// Shutdown.
	"no-exit-on-shutdown": {target: idShutdown, in: func(b *broken, n int, v view) [][]byte {
		b.mu.Lock()
		defer b.mu.Unlock()
		if v.valid && v.c.Cmd == "shutdown" && b.readySeen {
			return drop
		}
		return pass(v)
	}},
	"shutdown-first-error": {target: "shutdown/before-init", in: func(b *broken, n int, v view) [][]byte {
		b.mu.Lock()
		defer b.mu.Unlock()
		if v.valid && v.c.Cmd == "shutdown" && len(b.initLines) == 0 {
			b.write(enc(worker.Message{Type: "error", Line: n, Code: worker.CodeMalformed, Error: "shutdown before init"}))
		}
		return pass(v)
	}},
}
