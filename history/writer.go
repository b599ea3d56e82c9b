package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
)

// Writer streams events to history.jsonl. It keeps no event in memory: an
// event is encoded, written to the file (handed to the OS with write(2)),
// and only then does Append return, so the caller never reports an
// operation complete before its event is on its way to disk, and a harness
// killed with SIGKILL leaves every completed event in the file.
//
// Concurrent appends are grouped: while one goroutine writes, the others
// queue their encoded events, and the next writer writes the whole queue
// with one write(2) (group commit). It is safe for concurrent use; it
// assigns Seq in file order.
type Writer struct {
	mu      sync.Mutex
	cond    *sync.Cond
	f       *os.File
	seq     int64 // last assigned
	written int64 // last seq handed to the OS
	buf     []byte
	spare   []byte
	writing bool
	closed  bool
	err     error
	count   int64
}

var seqPrefix = []byte(`{"seq":0,`)

// Create opens path for writing, truncating it.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	w := &Writer{f: f}
	w.cond = sync.NewCond(&w.mu)
	return w, nil
}

// Append stamps e with the next sequence number (and the current time when
// e.Time is zero), writes it out and returns it once it is in the file.
func (w *Writer) Append(e Event) Event {
	if e.Time == 0 {
		e.Time = Now()
	}
	// Encode outside the lock with Seq 0; the sequence number is spliced in
	// under the lock so that file order is Seq order.
	e.Seq = 0
	b, err := json.Marshal(e)
	if err != nil || !bytes.HasPrefix(b, seqPrefix) {
		panic(fmt.Sprintf("history: marshal: %v", err))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	e.Seq = w.seq
	if w.closed {
		return e
	}
	w.count++
	w.buf = append(w.buf, `{"seq":`...)
	w.buf = strconv.AppendInt(w.buf, e.Seq, 10)
	w.buf = append(w.buf, b[len(seqPrefix)-1:]...)
	w.buf = append(w.buf, '\n')
	mine := w.seq
	for w.written < mine && !w.closed {
		if w.writing {
			w.cond.Wait()
			continue
		}
		// Become the writer for everything queued so far.
		batch, upto := w.buf, w.seq
		w.buf, w.spare = w.spare[:0], nil
		w.writing = true
		w.mu.Unlock()
		_, werr := w.f.Write(batch)
		w.mu.Lock()
		w.writing = false
		w.written = upto
		if cap(batch) <= 1<<20 {
			w.spare = batch[:0]
		}
		if werr != nil && w.err == nil {
			w.err = werr
			fmt.Fprintf(os.Stderr, "history: write: %v\n", werr)
		}
		w.cond.Broadcast()
	}
	return e
}

// Count is the number of events written so far.
func (w *Writer) Count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count
}

// Close syncs and closes the file. Later appends are dropped (their Seq is
// still assigned). It returns the first write error, if any.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.writing {
		w.cond.Wait()
	}
	if w.closed {
		return nil
	}
	w.closed = true
	// Events queued by appenders still waiting for their turn go out now.
	if len(w.buf) > 0 {
		if _, err := w.f.Write(w.buf); err != nil && w.err == nil {
			w.err = err
		}
		w.buf = nil
	}
	w.written = w.seq
	w.cond.Broadcast()
	if err := w.f.Sync(); err != nil {
		w.f.Close()
		return err
	}
	if err := w.f.Close(); err != nil {
		return err
	}
	return w.err
}
