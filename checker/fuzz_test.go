package checker

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockfault/lockfault/history"
)

// FuzzHistoryCheck: the history reader and the checker never panic on any
// history.jsonl, however torn or hostile, and the checker's answer is one
// of its classes, consistent with what it observed. Seeds: the histories
// in testdata/fuzz/FuzzHistoryCheck (impossible-*: one per kind of history
// the reader refuses as impossible) and the ones added here.
func FuzzHistoryCheck(f *testing.F) {
	f.Add([]byte(`{"seq":1,"t":1000,"kind":"invoke","process":"c1","op":"acquire","op_id":1}
{"seq":2,"t":2000,"kind":"ok","process":"c1","op":"acquire","op_id":1,"lease":"a"}
{"seq":3,"t":2500,"kind":"invoke","process":"c2","op":"acquire","op_id":2}
{"seq":4,"t":3000,"kind":"ok","process":"c2","op":"acquire","op_id":2,"lease":"b"}
{"seq":5,"t":9000,"kind":"invoke","process":"c1","op":"release","op_id":3,"lease":"a"}
{"seq":6,"t":9500,"kind":"invoke","process":"c2","op":"release","op_id":4,"lease":"b"}
`))
	f.Add([]byte(""))
	f.Add([]byte("{\"seq\":1,\"t\":5,\"ki"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "history.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		events, err := history.Read(path)
		if err != nil {
			// Refused with a message (malformed, torn, impossible): the
			// run has no events to judge, and that is never safe.
			if res := Check(nil, Options{}); res.Verdict != ClassUnknown {
				t.Fatalf("a refused history (%v) checks as %s, want unknown", err, res.Verdict)
			}
			return
		}
		res := Check(events, Options{StuckAfter: time.Second, LinearizabilityTimeout: 2 * time.Second})
		if res == nil {
			t.Fatal("nil result")
		}
		if ValidClass(res.Verdict) != nil {
			t.Fatalf("verdict %q is not a class", res.Verdict)
		}
		for _, c := range res.Observed {
			if ValidClass(c) != nil {
				t.Fatalf("observed %q is not a class", c)
			}
		}
		if res.Verdict == ClassSafe {
			for _, fd := range res.Findings {
				if fd.Class == ClassOverlap || fd.Class == ClassCorruption {
					t.Fatalf("verdict safe with a %s finding", fd.Class)
				}
			}
		}
	})
}
