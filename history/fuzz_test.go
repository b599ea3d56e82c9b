package history

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// refusalRE: every refusal names the file and the line, then the field.
var refusalRE = regexp.MustCompile(`^.*h\.jsonl:[0-9]+: [a-z_ ]+: |^.*h\.jsonl:[0-9]+: (not a history event|empty line)`)

// FuzzRead: Read and Scan never panic, agree with each other, refuse with
// file:line: field: what, and whatever they accept is a complete, possible
// history (checked here independently of sequence): seq 1, 2, 3… in file
// order, every completion after the invoke of its op by the same client for
// the same operation and only once, no op id invoked twice, no client going
// back in time; Read returns it ordered by time. Seeds:
// testdata/fuzz/FuzzRead (one per kind of impossible history) and the
// possible history of sequence_test.go.
func FuzzRead(f *testing.F) {
	f.Add([]byte(possible))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "h.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		evs, rerr := Read(p)
		var scanned []Event
		serr := Scan(p, func(e Event) error { scanned = append(scanned, e); return nil })
		if (rerr == nil) != (serr == nil) {
			t.Fatalf("Read: %v\nScan: %v", rerr, serr)
		}
		if rerr != nil {
			if !refusalRE.MatchString(rerr.Error()) || !refusalRE.MatchString(serr.Error()) {
				t.Fatalf("a refusal without file:line: field:\nRead: %v\nScan: %v", rerr, serr)
			}
			return
		}
		if len(evs) != len(scanned) {
			t.Fatalf("Read %d events, Scan %d", len(evs), len(scanned))
		}
		type op struct {
			process, name string
			done          bool
		}
		ops := map[int64]*op{}
		last := map[string]int64{}
		for i, e := range scanned {
			if e.Seq != int64(i+1) {
				t.Fatalf("event %d has seq %d", i+1, e.Seq)
			}
			if e.Kind != Invoke && e.Kind != OK && e.Kind != Fail && e.Kind != Info {
				continue
			}
			if t0, ok := last[e.Process]; ok && e.Time < t0 {
				t.Fatalf("seq %d: %s goes back in time", e.Seq, e.Process)
			}
			last[e.Process] = e.Time
			o := ops[e.OpID]
			if e.Kind == Invoke {
				if o != nil || e.OpID < 1 {
					t.Fatalf("seq %d: op id %d invoked again or not positive", e.Seq, e.OpID)
				}
				ops[e.OpID] = &op{process: e.Process, name: e.Op}
				continue
			}
			if o == nil || o.done || o.process != e.Process || o.name != e.Op {
				t.Fatalf("seq %d: impossible completion of op %d (%+v)", e.Seq, e.OpID, o)
			}
			o.done = true
		}
		if !slices.IsSortedFunc(evs, func(a, b Event) int { return int(min(max(a.Time-b.Time, -1), 1)) }) {
			t.Fatal("Read did not order the events by time")
		}
	})
}
