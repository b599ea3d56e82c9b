package history

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// possible is a history the harness can write: clients interleaved, one
// client's events earlier in time than another's before them in the file
// (workers stamp their own times), completions of every kind, and events
// without op ids (access, renew, notes, faults).
const possible = `{"seq":1,"t":100,"kind":"note","op":"cycle","cycle":1}
{"seq":2,"t":110,"kind":"invoke","process":"c1","op":"acquire","op_id":1}
{"seq":3,"t":130,"kind":"invoke","process":"c2","op":"acquire","op_id":2}
{"seq":4,"t":120,"kind":"ok","process":"c1","op":"acquire","op_id":1,"lease":"a"}
{"seq":5,"t":140,"kind":"renew","process":"c1","lease":"a","valid_until":900}
{"seq":6,"t":150,"kind":"invoke","process":"c1","op":"cs","op_id":3,"lease":"a"}
{"seq":7,"t":155,"kind":"access","process":"c1","lease":"a","access":"read","value":0}
{"seq":8,"t":156,"kind":"access","process":"c1","lease":"a","access":"write","value":1}
{"seq":9,"t":160,"kind":"ok","process":"c1","op":"cs","op_id":3,"lease":"a","read":0,"wrote":1}
{"seq":10,"t":170,"kind":"fail","process":"c2","op":"acquire","op_id":2}
{"seq":11,"t":170,"kind":"invoke","process":"c1","op":"release","op_id":4,"lease":"a"}
{"seq":12,"t":180,"kind":"fault-start","fault":"crash-client","target":"c1"}
{"seq":13,"t":190,"kind":"info","process":"c1","op":"release","op_id":4,"lease":"a","error":"worker process died"}
{"seq":14,"t":191,"kind":"note","op":"crashed","process":"c1"}
`

// Every impossible history is refused at the line that makes it impossible,
// naming the field: a gap, a repeated or misplaced seq, a completion
// without its invoke or after its first completion, an op id invoked
// twice, a client going back in time, a completion by another client or
// of another operation. (Before: all of them were read as valid, and
// checked.)
func TestReadRefusesImpossibleHistories(t *testing.T) {
	inv := func(seq, t, op int, proc string) string {
		return `{"seq":` + itoa(seq) + `,"t":` + itoa(t) + `,"kind":"invoke","process":"` + proc + `","op":"acquire","op_id":` + itoa(op) + "}\n"
	}
	done := func(seq, t, op int, proc, kind, name string) string {
		return `{"seq":` + itoa(seq) + `,"t":` + itoa(t) + `,"kind":"` + kind + `","process":"` + proc + `","op":"` + name + `","op_id":` + itoa(op) + "}\n"
	}
	note := func(seq int) string { return `{"seq":` + itoa(seq) + `,"t":1,"kind":"note"}` + "\n" }
	cases := []struct{ name, history, want string }{
		{"gap", note(1) + note(2) + note(4), "h.jsonl:3: seq: 4 where 3 belongs: event 3 is missing, the history has a gap (allowed: 3)"},
		{"long gap", note(1) + note(9), "h.jsonl:2: seq: 9 where 2 belongs: events 2 to 8 are missing"},
		{"repeated", note(1) + note(2) + note(2), "h.jsonl:3: seq: 2 repeated (allowed: 3"},
		{"out of order", note(1) + note(2) + note(3) + note(1), "h.jsonl:4: seq: 1 out of order after 3 (allowed: 4)"},
		{"swapped", note(2) + note(1), "h.jsonl:1: seq: 2 where 1 belongs"},
		{"no seq", note(1) + `{"t":1,"kind":"note"}` + "\n", "h.jsonl:2: seq: missing (allowed: 2"},
		{"completion without invoke", note(1) + done(2, 5, 7, "c1", OK, "acquire"), "h.jsonl:2: op_id: 7: an ok without an earlier invoke of op 7 (allowed: a completion follows the invoke of its op)"},
		{"completion before its invoke", done(1, 5, 1, "c1", Fail, "acquire") + inv(2, 4, 1, "c1"), "h.jsonl:1: op_id: 1: a fail without an earlier invoke"},
		{"second completion", inv(1, 1, 1, "c1") + done(2, 2, 1, "c1", OK, "acquire") + done(3, 3, 1, "c1", Info, "acquire"), "h.jsonl:3: op_id: 1 completes a second time, as info (allowed: one ok, fail or info per invoke)"},
		{"invoked twice", inv(1, 1, 1, "c1") + done(2, 2, 1, "c1", OK, "acquire") + inv(3, 3, 1, "c2"), "h.jsonl:3: op_id: 1 is invoked a second time (allowed: a new id for every invoke)"},
		{"invoked twice while open", inv(1, 1, 1, "c1") + inv(2, 2, 1, "c2"), "h.jsonl:2: op_id: 1 is invoked a second time"},
		{"time backwards", inv(1, 100, 1, "c1") + done(2, 200, 1, "c1", OK, "acquire") + inv(3, 150, 2, "c1"), "h.jsonl:3: t: 150 is before 200, the time of c1's previous operation event at line 2 (allowed: a client's events never go back in time)"},
		{"completion before invoke in time", inv(1, 100, 1, "c1") + done(2, 99, 1, "c1", OK, "acquire"), "h.jsonl:2: t: 99 is before 100"},
		{"another client completes", inv(1, 1, 1, "c1") + done(2, 2, 1, "c2", OK, "acquire"), `h.jsonl:2: process: c2 completes op 1, which c1 invoked at line 1 (allowed: "c1")`},
		{"another operation completes", inv(1, 1, 1, "c1") + done(2, 2, 1, "c1", OK, "release"), `h.jsonl:2: op: "release" completes op 1, invoked as "acquire" at line 1 (allowed: "acquire")`},
		{"op id zero", inv(1, 1, 0, "c1"), "h.jsonl:1: op_id: 0 on an invoke (allowed: a positive id"},
		{"op id negative", inv(1, 1, -3, "c1"), "h.jsonl:1: op_id: -3"},
		{"torn", note(1) + strings.TrimSuffix(note(2), "\n"), "h.jsonl:2: newline: missing at the end of the last line"},
		{"first error wins", note(1) + note(3) + "garbage\n", "h.jsonl:2: seq: 3 where 2 belongs"},
		{"decode error before impossibility", note(1) + "garbage\n" + note(5), "h.jsonl:2: not a history event"},
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "h.jsonl")
	for _, c := range cases {
		os.WriteFile(p, []byte(c.history), 0o644)
		if evs, err := Read(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Read gave %d events, %v\nwant %s", c.name, len(evs), err, c.want)
		}
		if err := Scan(p, func(Event) error { return nil }); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Scan: %v\nwant %s", c.name, err, c.want)
		}
	}
	// The possible history is accepted, and ordered by time.
	os.WriteFile(p, []byte(possible), 0o644)
	evs, err := Read(p)
	if err != nil || len(evs) != 14 || evs[3].Seq != 3 || evs[2].Seq != 4 {
		t.Fatalf("a possible history: %d events, %v", len(evs), err)
	}
	n := 0
	if err := Scan(p, func(Event) error { n++; return nil }); err != nil || n != 14 {
		t.Fatalf("Scan of a possible history: %d events, %v", n, err)
	}
}

// Op ids beyond the dense range (a worker's own numbering, a hostile file)
// are remembered as well as dense ones.
func TestSequenceSparseOpIDs(t *testing.T) {
	for _, id := range []int64{1, 63, 64, maxDenseID - 1, maxDenseID, 1 << 40, 1<<63 - 1} {
		s := newSequence()
		if err := s.next(&Event{Seq: 1, Kind: Invoke, Op: "acquire", OpID: id}); err != nil {
			t.Fatalf("id %d: %v", id, err)
		}
		if err := s.next(&Event{Seq: 2, Kind: OK, Op: "acquire", OpID: id}); err != nil {
			t.Fatalf("id %d: %v", id, err)
		}
		if err := s.next(&Event{Seq: 3, Kind: Invoke, Op: "acquire", OpID: id}); err == nil {
			t.Fatalf("id %d invoked twice, accepted", id)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
