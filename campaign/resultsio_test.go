package campaign

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func goodResult() Result {
	return Result{Campaign: "c", DefinitionHash: "sha256:ab", Version: "v", Shard: "1/2", Identity: "lock=single | property:x | 1",
		Subject: RunSubject{Lock: "single"}, Item: RunItem{KindProperty, "x"}, Repetition: 1, Outcome: Held}
}

// A write error (a full disk: /dev/full fails every write with ENOSPC)
// is returned by that write, every later one and Close, and nothing is
// written after it.
func TestWriterStopsAtFirstError(t *testing.T) {
	w, err := OpenWriter("/dev/full")
	if err != nil {
		t.Skipf("no /dev/full on this system: %v", err)
	}
	first := w.Write(goodResult())
	if !errors.Is(first, syscall.ENOSPC) {
		t.Fatalf("first write: %v, want ENOSPC", first)
	}
	if err := w.Write(goodResult()); err != first {
		t.Fatalf("second write: %v, want the first error again", err)
	}
	if err := w.Close(); err != first {
		t.Fatalf("close: %v, want the first error", err)
	}
	// A good file gets whole lines.
	path := filepath.Join(t.TempDir(), FileResults)
	w, err = OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := w.Write(goodResult()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines, err := ReadResults(path)
	if err != nil || len(lines) != 3 || lines[2].Line != 3 {
		t.Fatalf("read back %d lines, %v", len(lines), err)
	}
}

func TestReadResultsIsStrict(t *testing.T) {
	good := `{"campaign":"c","definition_hash":"sha256:ab","lockfault_version":"v","shard":"1/2","identity":"i","subject":{"lock":"single"},"item":{"kind":"property","name":"x"},"repetition":1,"outcome":"held","wall_ns":5,"finished":"2026-01-01T00:00:00Z"}`
	cases := []struct{ text, want string }{
		{good + "\n" + strings.Replace(good, `"wall_ns"`, `"extra":1,"wall_ns"`, 1), `r.jsonl:2: json: unknown field "extra"`},
		{strings.Replace(good, `"held"`, `"fine"`, 1), `r.jsonl:1: outcome: "fine" (allowed: held, matched, violated, no-match, not-claimed, unknown, harness-error)`},
		{strings.Replace(good, `"held"`, `"matched"`, 1), `r.jsonl:1: outcome: "matched" is not an outcome of a property`},
		{strings.Replace(good, `"repetition":1`, `"repetition":0`, 1), "r.jsonl:1: repetition: 0 (allowed: 1 to 1000)"},
		{strings.Replace(good, `"1/2"`, `"3/2"`, 1), `r.jsonl:1: shard: "3/2" is not i/N`},
		{strings.Replace(good, `"identity":"i"`, `"identity":""`, 1), "r.jsonl:1: identity: empty"},
		{good + " " + good, "r.jsonl:1: more than one JSON value on the line"},
		{good + "\n{", "r.jsonl:2: unexpected EOF"},
		{`{"campaign":"` + strings.Repeat("x", MaxLineLen) + `"}`, "r.jsonl:1: a line longer than 65536 bytes"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		p := filepath.Join(dir, "r.jsonl")
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadResults(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v\nwant %s", err, c.want)
		}
	}
	p := filepath.Join(dir, "r.jsonl")
	os.WriteFile(p, []byte(good+"\n\n"+good+"\n"), 0o644)
	if ls, err := ReadResults(p); err != nil || len(ls) != 2 {
		t.Fatalf("good file: %d lines, %v", len(ls), err)
	}
	if ls, err := ReadResults(filepath.Join(dir, "none.jsonl")); err != nil || ls != nil {
		t.Fatalf("a missing file is no results: %v %v", ls, err)
	}
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o644)
	if _, err := ReadResults(fifo); err == nil || !strings.Contains(err.Error(), "a FIFO") {
		t.Fatalf("a FIFO: %v", err)
	}
}
