package scenarios

import (
	"reflect"
	"strings"
	"testing"
)

const commandGood = `name: cmd
topology: {kind: standalone}
lock: {name: single, ttl: 2s}
workload: {clients: 2, hold: 100ms}
nemesis:
  steps:
    - await: command
      by: c2
      command: {name: "SET|setnx", key: "order*", op: acquire, at: reply, reply: ok}
      within: 10s
    - {fault: pause-client, target: trigger, for: 1300ms}
    - {await: command, command: {sha: e0e1f9fabfc9d4800c877a703b823ac0578ff831, nth: 2}}
    - {fault: partition-client, target: all, params: {clients: trigger}}
    - {await: command, command: {script: "redis.call('del'"}}
    - {sleep: 1s}
expect: [safe]
`

func TestCommandAwaitParses(t *testing.T) {
	s, err := Parse("cmd.yaml", []byte(commandGood))
	if err != nil {
		t.Fatal(err)
	}
	st := s.Nemesis.Steps
	want := &CommandMatch{Name: "SET|setnx", Key: "order*", Op: OpAcquire, Nth: 1, At: AtReply, Reply: ReplyOK}
	if !reflect.DeepEqual(st[0].Command, want) {
		t.Fatalf("match %+v, want %+v", st[0].Command, want)
	}
	if got := st[0].Command.Names(); !reflect.DeepEqual(got, []string{"SET", "SETNX"}) {
		t.Fatalf("names %v", got)
	}
	// Defaults: the first match, at the request, any reply.
	if m := st[4].Command; m.Nth != 1 || m.At != AtRequest || m.Reply != "" {
		t.Fatalf("defaults not filled: %+v", m)
	}
	for i, w := range []string{
		`await command name=SET|setnx key=order* op=acquire at=reply reply=ok by c2 within 10s`,
		`fault pause-client on trigger for 1.3s`,
		`await command sha=e0e1f9fabfc9d4800c877a703b823ac0578ff831 nth=2`,
		`fault partition-client on all clients=trigger`,
		`await command script="redis.call('del'"`,
	} {
		if got := st[i].String(); got != w {
			t.Errorf("step %d: %q, want %q", i, got, w)
		}
	}
}

// A scenario with command awaits is written back (scenario.yaml, a hunt's
// minimal.yaml) to a file that loads to the same steps.
func TestCommandAwaitRoundTrips(t *testing.T) {
	s, err := Parse("cmd.yaml", []byte(commandGood))
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("back.yaml", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for i := range s.Nemesis.Steps {
		a, b := s.Nemesis.Steps[i], back.Nemesis.Steps[i]
		a.Line, b.Line = 0, 0
		if !reflect.DeepEqual(a, b) {
			t.Errorf("step %d: %+v became %+v\n%s", i, a, b, out)
		}
	}
}

// Every bad command step is refused with file:line: field: what (allowed).
func TestCommandAwaitRefusals(t *testing.T) {
	line := "command: {name: \"SET|setnx\", key: \"order*\", op: acquire, at: reply, reply: ok}"
	cases := []struct {
		name, from, to string
		want           []string
	}{
		{"unknown field", line, "command: {name: SET, colour: red}", []string{"cmd.yaml:9: nemesis.steps.0.command.colour: unknown field (allowed: name, key, script, sha, op, node, write, nth, at, reply)"}},
		{"empty match", line, "command: {nth: 2}", []string{"cmd.yaml:9: nemesis.steps.0.command:", "matches every command", "name, key, script, sha, op"}},
		{"no match", line, "", []string{"cmd.yaml:7: nemesis.steps.0.await:", "missing the command"}},
		{"bad glob", line, "command: {key: \"order[\"}", []string{"cmd.yaml:9: nemesis.steps.0.command.key:", "not a glob (allowed: path.Match syntax"}},
		{"bad name", line, "command: {name: \"SET||GET\"}", []string{"nemesis.steps.0.command.name:", `"" is not a command name`}},
		{"bad sha", line, "command: {sha: abc}", []string{"nemesis.steps.0.command.sha:", "allowed: 40 hexadecimal digits"}},
		{"bad op", line, "command: {op: hold}", []string{"nemesis.steps.0.command.op:", "allowed: acquire, release, extend, cs"}},
		{"bad node", line, "command: {op: release, node: n2}", []string{"cmd.yaml:9: nemesis.steps.0.command.node:", `"n2" is not a Redis node of this topology (allowed: n1)`}},
		{"nth 0 ok, nth -1", line, "command: {op: release, nth: -1}", []string{"nemesis.steps.0.command.nth:", "want 1 to 1000, got -1"}},
		{"nth too big", line, "command: {op: release, nth: 1001}", []string{"nemesis.steps.0.command.nth:", "want 1 to 1000"}},
		{"bad at", line, "command: {op: release, at: response}", []string{"nemesis.steps.0.command.at:", "allowed: request, reply"}},
		{"reply at request", line, "command: {op: release, reply: ok}", []string{"nemesis.steps.0.command.reply:", "at: reply or after-reply only"}},
		{"bad reply", line, "command: {op: release, at: reply, reply: maybe}", []string{"nemesis.steps.0.command.reply:", "allowed: ok, nil, error, any"}},
		{"nth not a number", line, "command: {op: release, nth: two}", []string{"cmd.yaml:9: nemesis.steps.0.command.nth:", "not a whole number"}},
		{"command without await command", "{sleep: 1s}", "{sleep: 1s, command: {op: release}}", []string{"nemesis.steps.5.command:", "goes with `await: command` only"}},
		{"trigger without await", "- await: command\n      by: c2\n      " + line + "\n      within: 10s\n", "- {sleep: 1s}\n", []string{"nemesis.steps.1.target:", "no earlier step of this cycle", "allowed: c1..c2, holder, others, all"}},
		{"by trigger", "by: c2", "by: trigger", []string{"nemesis.steps.0.by:", "trigger is a fault target"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(commandGood, c.from, c.to, 1)
			if src == commandGood {
				t.Fatal("case did not change the input")
			}
			_, err := Parse("cmd.yaml", []byte(src))
			if err == nil {
				t.Fatalf("accepted:\n%s", src)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
