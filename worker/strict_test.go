package worker

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/lockimpl"
)

// Every case of the strict rules, one line each, through a live worker.
// Lines that should be refused are sent after a successful init without
// endpoints, so only the rule under test can refuse them.
func TestStrictRulesRefuseBadLines(t *testing.T) {
	cases := []struct {
		name, line, code, want string
	}{
		{"trailing data", `{"cmd":"clock"}{"cmd":"shutdown"}`, CodeMalformed, "data after the JSON object"},
		{"trailing garbage", `{"cmd":"clock"} x`, CodeMalformed, "data after the JSON object"},
		{"key case", `{"CMD":"clock"}`, CodeMalformed, "field cmd: missing"},
		{"field case", `{"cmd":"clock","Offset_ms":5}`, CodeMalformed, "field Offset_ms: unknown key"},
		{"key of another command", `{"cmd":"cs","op":1,"lease":"L","ttl_ms":5}`, CodeMalformed, "field ttl_ms: unknown key"},
		{"duplicate key", `{"cmd":"clock","offset_ms":1,"offset_ms":2}`, CodeMalformed, "given twice"},
		{"null", `{"cmd":"clock","offset_ms":null}`, CodeMalformed, "null is not allowed"},
		{"not an object", `["clock"]`, CodeMalformed, "not a JSON object"},
		{"not UTF-8", "{\"cmd\":\"clock\",\"x\":\"\xff\"}", CodeMalformed, "not UTF-8"},
		{"unknown command", `{"cmd":"fly"}`, CodeNotSupported, "unknown command"},
		{"negative op", `{"cmd":"release","op":-1,"lease":"L"}`, CodeMalformed, "field op"},
		{"zero op", `{"cmd":"release","op":0,"lease":"L"}`, CodeMalformed, "field op"},
		{"op too big", `{"cmd":"release","op":9007199254740992,"lease":"L"}`, CodeMalformed, "field op"},
		{"fractional op", `{"cmd":"release","op":1.5,"lease":"L"}`, CodeMalformed, "field op"},
		{"ttl zero", `{"cmd":"acquire","op":2,"key":"k","ttl_ms":0}`, CodeMalformed, "ttl_ms: 0 is out of range"},
		{"ttl huge", `{"cmd":"acquire","op":3,"key":"k","ttl_ms":3600001}`, CodeMalformed, "out of range"},
		{"negative wait", `{"cmd":"acquire","op":4,"key":"k","ttl_ms":5,"wait_ms":-1}`, CodeMalformed, "wait_ms"},
		{"negative hold", `{"cmd":"cs","op":5,"lease":"L","hold_ms":-1}`, CodeMalformed, "hold_ms"},
		{"negative count", `{"cmd":"failpoint","name":"cs-after-read","action":"crash","count":-1}`, CodeMalformed, "count"},
		{"negative ms", `{"cmd":"failpoint","name":"cs-after-read","action":"sleep","ms":-5}`, CodeMalformed, "field ms"},
		{"bad action", `{"cmd":"failpoint","name":"cs-after-read","action":"explode"}`, CodeMalformed, "allowed: crash, sleep, stop, off"},
		{"count overflows int", `{"cmd":"failpoint","name":"cs-after-read","action":"crash","count":99999999999999999999}`, CodeMalformed, "count"},
		{"huge clock offset", `{"cmd":"clock","offset_ms":9223372036854775}`, CodeMalformed, "offset_ms"},
		{"unsupported failpoint", `{"cmd":"failpoint","name":"after-setnx","action":"crash"}`, CodeNotSupported, "cannot hit it"},
		{"second init", `{"cmd":"init","client":"c1","lock":"single"}`, CodeMalformed, "already initialised"},
		{"op before endpoints", `{"cmd":"acquire","op":6,"key":"k","ttl_ms":5}`, CodeMalformed, "before the lock has endpoints"},
		{"unknown endpoints key", `{"cmd":"endpoints","endpoints":{"Primary":"x"}}`, CodeMalformed, "endpoints.Primary"},
	}
	send, recv := session(t)
	send(`{"cmd":"init","client":"c1","lock":"single"}`)
	if m := recv(); m.Type != "ready" {
		t.Fatalf("init without endpoints: %+v", m)
	}
	for i, c := range cases {
		send(c.line)
		m := recv()
		line := i + 2
		if m.Type != "error" || m.Code != c.code || m.Line != line || !strings.Contains(m.Error, c.want) || !strings.Contains(m.Error, fmt.Sprintf("stdin:%d:", line)) {
			t.Errorf("%s: %s\n got %+v\nwant error code %s at line %d containing %q", c.name, c.line, m, c.code, line, c.want)
		}
		if c.name == "unsupported failpoint" && (m.Name != "after-setnx" || m.Action != "crash") {
			t.Errorf("unsupported failpoint: the error should name it: %+v", m)
		}
	}
}

func TestOpIDsAreUniqueAndRefusedOpsEnd(t *testing.T) {
	send, recv := session(t)
	send(`{"cmd":"init","client":"c1","lock":"single"}`)
	recv()
	send(`{"cmd":"acquire","op":7,"key":"k","ttl_ms":0}`)
	if m := recv(); m.Type != "error" || m.Op != 7 {
		t.Fatalf("a refused op with a new id is ended by its error: %+v", m)
	}
	send(`{"cmd":"release","op":7,"lease":"L"}`)
	if m := recv(); m.Type != "error" || m.Op != 0 || !strings.Contains(m.Error, "op id 7 was used before") {
		t.Fatalf("duplicate op id: %+v (it must not end op 7 a second time)", m)
	}
	send(`{"cmd":"release","op":8,"lease":"L"}`)
	if m := recv(); m.Type != "error" || m.Op != 8 || !strings.Contains(m.Error, "before the lock has endpoints") {
		t.Fatalf("a valid op refused by the order rules is ended by its error: %+v", m)
	}
	send(`{"cmd":"release","op":8,"lease":"L"}`)
	if m := recv(); m.Type != "error" || m.Op != 0 || !strings.Contains(m.Error, "op id 8 was used before") {
		t.Fatalf("duplicate op id: %+v", m)
	}
}

func TestInitRules(t *testing.T) {
	t.Run("first", func(t *testing.T) {
		send, recv := session(t)
		for _, l := range []string{`{"cmd":"clock","offset_ms":5}`, `{"cmd":"endpoints","endpoints":{"primary":"127.0.0.1:1"}}`} {
			send(l)
			if m := recv(); m.Type != "error" || !strings.Contains(m.Error, "before init") {
				t.Errorf("%s before init: %+v", l, m)
			}
		}
	})
	t.Run("failed init then endpoints builds nothing", func(t *testing.T) {
		send, recv := session(t)
		send(`{"cmd":"init","client":"c1","lock":"nonesuch","resource":"127.0.0.1:1"}`)
		if m := recv(); m.Type != "error" || m.Code != CodeNotSupported || !strings.Contains(m.Error, "unknown lock") {
			t.Fatalf("unknown lock: %+v", m)
		}
		send(`{"cmd":"endpoints","endpoints":{"primary":"127.0.0.1:1"}}`)
		if m := recv(); m.Type != "error" || !strings.Contains(m.Error, "after a failed init") {
			t.Fatalf("endpoints after a failed init: %+v", m)
		}
		send(`{"cmd":"acquire","op":1,"key":"k","ttl_ms":5}`)
		if m := recv(); m.Type != "error" || m.Op != 1 || !strings.Contains(m.Error, "after a failed init") {
			t.Fatalf("acquire after a failed init: %+v", m)
		}
		send(`{"cmd":"init","client":"c1","lock":"single"}`)
		if m := recv(); m.Type != "error" || !strings.Contains(m.Error, "exactly once") {
			t.Fatalf("init after a failed init: %+v", m)
		}
	})
	t.Run("unknown option", func(t *testing.T) {
		send, recv := session(t)
		send(`{"cmd":"init","client":"c1","lock":"single","options":{"colour":"red"}}`)
		if m := recv(); m.Type != "error" || m.Code != CodeNotSupported || !strings.Contains(m.Error, `no option "colour"`) {
			t.Fatalf("unknown option: %+v", m)
		}
	})
	t.Run("ready describes the lock", func(t *testing.T) {
		send, recv := session(t)
		send(`{"cmd":"init","client":"c1","lock":"setnx-expire"}`)
		m := recv()
		info, _ := lockimpl.Lookup("setnx-expire")
		if m.Type != "ready" || m.Lock != "setnx-expire" || m.Needs != info.Needs || m.Pid == 0 {
			t.Fatalf("ready: %+v", m)
		}
		for _, want := range append(append([]string{}, info.Failpoints...), WorkerFailpoints...) {
			if !strings.Contains(" "+strings.Join(m.Failpoints, " ")+" ", " "+want+" ") {
				t.Errorf("ready failpoints %v lack %s", m.Failpoints, want)
			}
		}
		if err := ValidateReady(m); err != nil {
			t.Error(err)
		}
	})
}

// A line over MaxLine is answered with an error naming it, and the worker
// stays in step: the next line is read as the next command.
func TestOverLongLine(t *testing.T) {
	send, recv := session(t)
	send(`{"cmd":"init","client":"c1","lock":"single","resource":"` + strings.Repeat("x", MaxLine) + `"}`)
	if m := recv(); m.Type != "error" || m.Line != 1 || !strings.Contains(m.Error, "line longer than") {
		t.Fatalf("over-long line: %+v", m)
	}
	send(`{"cmd":"init","client":"c1","lock":"single"}`)
	if m := recv(); m.Type != "ready" {
		t.Fatalf("the line after: %+v", m)
	}
}

// The harness's own commands, as it encodes them, pass the strict rules.
func TestHarnessCommandsAreStrict(t *testing.T) {
	cmds := []Command{
		{Cmd: "init", Client: "c1", Lock: "single", Endpoints: lockimpl.Endpoints{Primary: "127.0.0.1:1"}, Resource: "127.0.0.1:2"},
		{Cmd: "init", Client: "c1", Lock: "redisson", Options: map[string]string{"watchdog": "true"}, Endpoints: lockimpl.Endpoints{Masters: []string{"a:1"}}, Resource: "r:1"},
		{Cmd: "init", Client: "describe", Lock: "single"},
		{Cmd: "acquire", Op: 1, Key: "order", Lease: "c1-1", TTLMs: 2000, WaitMs: 2000},
		{Cmd: "acquire", Op: 1, Key: "order", Lease: "c1-1", TTLMs: 2000},
		{Cmd: "cs", Op: 2, Lease: "c1-1", HoldMs: 500},
		{Cmd: "cs", Op: 2, Lease: "c1-1"},
		{Cmd: "release", Op: 3, Lease: "c1-1"},
		{Cmd: "extend", Op: 4, Lease: "c1-1", TTLMs: 2000},
		{Cmd: "failpoint", Name: "before-release", Action: "stop", Ms: 1500, Count: 2},
		{Cmd: "failpoint", Name: "before-release", Action: "off"},
		{Cmd: "clock", OffsetMs: -5000},
		{Cmd: "clock"},
		{Cmd: "endpoints", Endpoints: lockimpl.Endpoints{Primary: "127.0.0.1:1"}},
		{Cmd: "shutdown"},
	}
	for _, c := range cmds {
		b, _ := json.Marshal(c)
		got, err := DecodeCommand(b)
		if err != nil {
			t.Errorf("%s: %v", b, err)
			continue
		}
		again, _ := json.Marshal(got)
		if string(again) != string(b) {
			t.Errorf("round trip: %s -> %s", b, again)
		}
	}
}

func TestDecodeMessageIsStrict(t *testing.T) {
	good := []string{
		`{"type":"ready","pid":1,"lock":"x","needs":"single"}`,
		`{"type":"reply","op":3,"status":"ok","read":0,"wrote":1}`,
		`{"type":"fired","name":"cs-after-read","action":"crash"}`,
		`{"type":"error","line":2,"code":"not-supported","name":"x","action":"crash","error":"no"}`,
	}
	for _, l := range good {
		if _, err := DecodeMessage([]byte(l)); err != nil {
			t.Errorf("%s: %v", l, err)
		}
	}
	bad := map[string]string{
		`{"type":"reply","op":3,"status":"ok"} {}`:     "data after",
		`{"Type":"reply","op":3,"status":"ok"}`:        "unknown key",
		`{"type":"reply","op":3,"status":"done"}`:      "field status",
		`{"type":"reply","status":"ok"}`:               "field op",
		`{"type":"reply","op":-3,"status":"ok"}`:       "field op",
		`{"type":"hello"}`:                             "unknown message type",
		`{"type":"error","code":"oops","error":"x"}`:   "field code",
		`{"type":"reply","op":"3","status":"ok"}`:      "field op",
		`{"type":"reply","op":3,"op":4,"status":"ok"}`: "given twice",
		`hello`: "not JSON",
		`{"type":"stopping","name":"x","ms":3600001}`: "field ms",
		`{"type":"stopping","name":"x","ms":-1}`:      "field ms",
	}
	for l, want := range bad {
		if _, err := DecodeMessage([]byte(l)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", l, err, want)
		}
	}
	for _, m := range []Message{{Lock: "x", Needs: "zookeeper"}, {Needs: "single"}, {Lock: "x", Needs: "single", Caps: []string{"teleport"}}} {
		if ValidateReady(m) == nil {
			t.Errorf("ValidateReady(%+v) accepted it", m)
		}
	}
}
