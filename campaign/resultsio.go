package campaign

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
)

// Files of a shard's results folder.
const (
	FileResults  = "results.jsonl" // one Result per line, appended as runs finish
	FileManifest = "shard.json"    // the shard, its definition, how far it got
)

// Writer appends result lines to a file. It stops at the first write
// error: that error is returned by that Write and every later one, and
// by Close, so a full disk is reported once and not papered over.
type Writer struct {
	mu  sync.Mutex
	f   *os.File
	err error
}

// OpenWriter opens (creating or appending to) a results file.
func OpenWriter(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &Writer{f: f}, nil
}

// Write appends one line (a single write call, synced to disk: a line is
// either whole or absent after a crash).
func (w *Writer) Write(r Result) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	data, err := json.Marshal(r)
	if err != nil {
		w.err = fmt.Errorf("%s: %v", w.f.Name(), err)
		return w.err
	}
	if len(data)+1 > MaxLineLen {
		w.err = fmt.Errorf("%s: result %s is %d bytes (allowed: at most %d)", w.f.Name(), r.Identity, len(data)+1, MaxLineLen)
		return w.err
	}
	if _, err := w.f.Write(append(data, '\n')); err != nil {
		w.err = fmt.Errorf("%s: %w", w.f.Name(), err)
		return w.err
	}
	if err := w.f.Sync(); err != nil {
		w.err = fmt.Errorf("%s: %w", w.f.Name(), err)
	}
	return w.err
}

// Err is the first write error, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close closes the file and returns the first error of the writer's life.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = err
	}
	return w.err
}

// Line is a result read back with the line it was on.
type Line struct {
	Result
	Line int
}

// ReadResults reads a results file strictly: every line one Result with
// no unknown field, each at most MaxLineLen bytes, at most MaxRuns lines
// and MaxResultsSize bytes; errors read path:line: field: what is wrong.
// A missing file is no results.
func ReadResults(path string) ([]Line, error) {
	f, err := openRegular(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > MaxResultsSize {
		return nil, fmt.Errorf("%s: %d bytes (allowed: at most %d)", path, st.Size(), MaxResultsSize)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineLen)
	var out []Line
	n := 0
	for sc.Scan() {
		n++
		if n > MaxRuns {
			return nil, fmt.Errorf("%s:%d: more than %d lines (allowed: at most %d runs)", path, n, MaxRuns, MaxRuns)
		}
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r Result
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("%s:%d: more than one JSON value on the line (allowed: one result per line)", path, n)
		}
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		out = append(out, Line{r, n})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: a line longer than %d bytes (allowed: at most %d)", path, n+1, MaxLineLen, MaxLineLen)
		}
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return out, nil
}
