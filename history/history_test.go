package history

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestWriterIsFlushedAndConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				w.Append(Event{Kind: Note, Op: "x"})
			}
		}()
	}
	wg.Wait()
	// Before Close: everything is already on disk (a crashed harness
	// leaves a readable history).
	evs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 800 {
		t.Fatalf("read %d events before close, want 800", len(evs))
	}
	seen := map[int64]bool{}
	for _, e := range evs {
		if seen[e.Seq] || e.Time == 0 {
			t.Fatalf("bad event %+v", e)
		}
		seen[e.Seq] = true
	}
	w.Close()
}

func TestReadToleratesOnlyATornLastLine(t *testing.T) {
	dir := t.TempDir()
	good := `{"seq":1,"t":5,"kind":"note"}` + "\n" + `{"seq":2,"t":6,"kind":"note"}` + "\n"
	torn := filepath.Join(dir, "torn.jsonl")
	os.WriteFile(torn, []byte(good+`{"seq":3,"t":7,"ki`), 0o644)
	evs, err := Read(torn)
	if err != nil || len(evs) != 2 {
		t.Fatalf("torn tail: %d events, %v; want 2 and no error", len(evs), err)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"seq":1}`+"\nnot json\n"+good), 0o644)
	if _, err := Read(bad); err == nil || !strings.Contains(err.Error(), "bad.jsonl:2:") {
		t.Fatalf("a malformed middle line must be an error naming line 2, got %v", err)
	}
}

func TestNowIsMonotonic(t *testing.T) {
	a := Now()
	b := Now()
	if b < a || a <= 0 {
		t.Fatalf("Now went from %d to %d", a, b)
	}
}
