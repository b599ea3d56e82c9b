package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

// Writer appends events to history.jsonl. Every event is written and flushed
// to the file before Append returns, so a harness that crashes leaves a
// readable prefix. It is safe for concurrent use; it assigns Seq.
type Writer struct {
	mu     sync.Mutex
	f      *os.File
	seq    int64
	events []Event
	closed bool
}

// Create opens path for writing, truncating it.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &Writer{f: f}, nil
}

// Append stamps e with the next sequence number (and the current time when
// e.Time is zero) and writes it out.
func (w *Writer) Append(e Event) Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	e.Seq = w.seq
	if e.Time == 0 {
		e.Time = Now()
	}
	w.events = append(w.events, e)
	if w.closed {
		return e
	}
	b, err := json.Marshal(e)
	if err != nil {
		panic(fmt.Sprintf("history: marshal: %v", err))
	}
	b = append(b, '\n')
	if _, err := w.f.Write(b); err != nil {
		fmt.Fprintf(os.Stderr, "history: write: %v\n", err)
	}
	return e
}

// Events returns a copy of everything appended so far.
func (w *Writer) Events() []Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Event(nil), w.events...)
}

// Close syncs and closes the file. Later appends are kept in memory only.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if err := w.f.Sync(); err != nil {
		w.f.Close()
		return err
	}
	return w.f.Close()
}

// Read parses a history.jsonl file. A torn last line (the harness died while
// writing it) is dropped; any other malformed line is an error naming it.
func Read(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	line := 0
	var pendingErr error
	for sc.Scan() {
		line++
		if pendingErr != nil {
			return nil, pendingErr
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			pendingErr = fmt.Errorf("%s:%d: not a history event: %v", path, line, err)
			continue
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	// pendingErr on the very last line is a torn write: tolerated.
	return out, nil
}
