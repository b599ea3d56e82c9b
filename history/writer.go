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
//
// A history with a hole in it is worse than none: it looks complete. So the
// writer stops at its first error (a failed or short write, a failed sync
// or close): nothing is written after it, later appends are dropped and
// counted (Dropped), and Err and Close return that first error. The caller
// must then treat the run as having no verdict. Whatever the failed write
// left in the file (a torn last line, or whole events with later seqs
// missing) is refused by Read.
type Writer struct {
	mu      sync.Mutex
	cond    *sync.Cond
	f       *os.File
	seq     int64 // last assigned
	written int64 // last seq handed to the OS (or given up on)
	buf     []byte
	queued  int64 // events in buf
	spare   []byte
	writing bool
	closed  bool
	err     error // the first error; nothing is written after it
	count   int64 // events written
	dropped int64 // events not written because of err or Close
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
// After the writer's first error or Close, the event is dropped (its Seq is
// still assigned) and Append returns at once.
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
	if w.closed || w.err != nil {
		w.dropped++
		return e
	}
	w.buf = append(w.buf, `{"seq":`...)
	w.buf = strconv.AppendInt(w.buf, e.Seq, 10)
	w.buf = append(w.buf, b[len(seqPrefix)-1:]...)
	w.buf = append(w.buf, '\n')
	w.queued++
	mine := w.seq
	for w.written < mine && !w.closed && w.err == nil {
		if w.writing {
			w.cond.Wait()
			continue
		}
		// Become the writer for everything queued so far.
		batch, upto, n := w.buf, w.seq, w.queued
		w.buf, w.spare, w.queued = w.spare[:0], nil, 0
		w.writing = true
		w.mu.Unlock()
		_, werr := w.f.Write(batch)
		w.mu.Lock()
		w.writing = false
		w.written = upto
		if cap(batch) <= 1<<20 {
			w.spare = batch[:0]
		}
		if werr != nil {
			w.dropped += n
			w.fail(fmt.Errorf("write: %w", werr))
		} else {
			w.count += n
		}
		w.cond.Broadcast()
	}
	return e
}

// fail records the writer's first error and drops what is queued. w.mu is
// held.
func (w *Writer) fail(err error) {
	if w.err != nil {
		return
	}
	w.err = fmt.Errorf("history: %w", err)
	w.dropped += w.queued
	w.buf, w.queued = nil, 0
	fmt.Fprintf(os.Stderr, "%v: the history is incomplete; later events are dropped\n", w.err)
}

// Count is the number of events written so far.
func (w *Writer) Count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count
}

// Dropped is the number of events appended but not written: after the
// writer's first error, or after Close.
func (w *Writer) Dropped() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}

// Err is the writer's first error (a write, sync or close that failed), or
// nil. Once it is set, nothing more is written: the history is incomplete.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close writes what is queued, syncs and closes the file. Later appends are
// dropped (their Seq is still assigned). It returns the writer's first
// error: of a write, of the sync or of the close; calling it again returns
// the same.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.writing {
		w.cond.Wait()
	}
	if w.closed {
		return w.err
	}
	w.closed = true
	// Events queued by appenders still waiting for their turn go out now.
	if len(w.buf) > 0 && w.err == nil {
		if _, err := w.f.Write(w.buf); err != nil {
			w.dropped += w.queued
			w.queued = 0
			w.fail(fmt.Errorf("write: %w", err))
		} else {
			w.count += w.queued
		}
	}
	w.buf, w.queued = nil, 0
	w.written = w.seq
	w.cond.Broadcast()
	if err := w.f.Sync(); err != nil {
		w.fail(fmt.Errorf("sync: %w", err))
	}
	if err := w.f.Close(); err != nil {
		w.fail(fmt.Errorf("close: %w", err))
	}
	return w.err
}
