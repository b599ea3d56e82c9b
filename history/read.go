package history

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/lockfault/lockfault/internal/userfile"
)

// Kinds lists the event kinds a history may hold.
var Kinds = []string{Invoke, OK, Fail, Info, Renew, Access, FaultStart, FaultEnd, Note}

// Validate says what is wrong with one event, as "field: what is wrong
// (allowed: ...)", or nil. It checks what the checker relies on, so a
// history that passes cannot make it fail or guess.
func Validate(e *Event) error {
	switch e.Kind {
	case Invoke, OK, Fail, Info:
		if e.Op == "" {
			return fmt.Errorf("op: missing on a %q event (allowed: %s, %s, %s, %s or a lock's own operation name)", e.Kind, OpAcquire, OpCS, OpRelease, OpExtend)
		}
	case Renew:
		if e.Lease == "" {
			return errors.New("lease: missing on a renew event (allowed: the lease the renewal moved)")
		}
	case Access:
		if e.Access != "read" && e.Access != "write" {
			return fmt.Errorf("access: %q (allowed: read, write)", e.Access)
		}
		if !e.Rejected && e.Value == nil {
			return fmt.Errorf("value: missing on an accepted %s (allowed: the integer read or written; only a rejected access has none)", e.Access)
		}
	case FaultStart, FaultEnd:
		if e.Fault == "" {
			return fmt.Errorf("fault: missing on a %q event (allowed: a fault name)", e.Kind)
		}
	case Note:
	case "":
		return fmt.Errorf("kind: missing (allowed: %s)", strings.Join(Kinds, ", "))
	default:
		return fmt.Errorf("kind: %q (allowed: %s)", e.Kind, strings.Join(Kinds, ", "))
	}
	if e.Time < 0 {
		return fmt.Errorf("t: %d (allowed: a CLOCK_MONOTONIC reading in ns, >= 0)", e.Time)
	}
	return nil
}

// Bounds on a history file: a larger file, more events or a longer line
// is refused with the bound in the message, before it is read into memory.
const (
	MaxFileSize = 4 << 30  // bytes
	MaxEvents   = 1 << 24  // lines
	MaxLineSize = 16 << 20 // bytes of one line
)

// errTorn is the error for a last line without its newline.
var errTorn = errors.New("newline: missing at the end of the last line, so its write was cut short and the history is incomplete (allowed: every line ends with a newline)")

// Scan reads a history.jsonl file in one pass and calls fn with each event
// in file order. The file must be a complete history: every line a valid
// event ending with a newline (a torn last line means the writer was cut
// short), and the lines together a possible history (see sequence: seq 1,
// 2, 3… without a gap, every completion after its invoke, no op completed
// twice, no client going back in time). Anything else is an error
// "path:line: field: what is wrong (allowed: ...)". fn's error stops the
// scan.
func Scan(path string, fn func(Event) error) error {
	f, err := userfile.Open(path, MaxFileSize)
	if err != nil {
		return err
	}
	defer f.Close()
	in := newInterner()
	seq := newSequence()
	rd := bufio.NewReaderSize(f, 1<<20)
	line := 0
	for {
		b, rerr := rd.ReadSlice('\n')
		if rerr == bufio.ErrBufferFull {
			// A long line: gather it whole.
			long := append([]byte(nil), b...)
			for rerr == bufio.ErrBufferFull {
				b, rerr = rd.ReadSlice('\n')
				long = append(long, b...)
				if len(long) > MaxLineSize {
					return fmt.Errorf("%s:%d: line: longer than %d bytes (allowed: at most %d)", path, line+1, MaxLineSize, MaxLineSize)
				}
			}
			b = long
		}
		if rerr != nil && rerr != io.EOF {
			return fmt.Errorf("%s: %v", path, rerr)
		}
		if len(b) == 0 && rerr == io.EOF {
			return nil
		}
		line++
		if line > MaxEvents {
			return fmt.Errorf("%s:%d: line: more than %d events (allowed: at most %d)", path, line, MaxEvents, MaxEvents)
		}
		if rerr == io.EOF {
			return fmt.Errorf("%s:%d: %v", path, line, errTorn)
		}
		var e Event
		if err := decodeLine(b, &e, in); err != nil {
			return fmt.Errorf("%s:%d: %v", path, line, err)
		}
		if err := seq.next(&e); err != nil {
			return fmt.Errorf("%s:%d: %v", path, line, err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
}

// Read parses a whole history.jsonl file (see Scan for what is an error)
// and returns its events ordered by time (file order among equal times).
// It counts the lines first, so the events are allocated once, then decodes
// chunks of lines on every core, then checks them in file order.
func Read(path string) ([]Event, error) {
	f, err := userfile.Open(path, MaxFileSize)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := countLines(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if n > MaxEvents {
		return nil, fmt.Errorf("%s: %d lines (allowed: at most %d events)", path, n, MaxEvents)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	out := make([]Event, n)
	d := startDecoders(out)
	line, torn, rerr := readChunks(f, n, d.send)
	errs := d.wait()
	if rerr != nil {
		return nil, fmt.Errorf("%s: %v", path, rerr)
	}
	if line != n {
		return nil, fmt.Errorf("%s: changed while being read (%d lines, then %d)", path, n, line)
	}
	if first := firstError(out, errs, torn); first.line <= n {
		return nil, fmt.Errorf("%s:%d: %v", path, first.line, first.err)
	}
	SortByTime(out)
	return out, nil
}

// chunk is a run of whole lines of the file, and the index of its first.
type chunk struct {
	data  []byte
	first int
}

// lineErr is why the line numbered line (from 1) is no event.
type lineErr struct {
	line int
	err  error
}

// decoders decode chunks into their events in out on a few goroutines,
// each with its own interner, and keep every line's error.
type decoders struct {
	out  []Event
	work chan chunk
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []lineErr
}

func startDecoders(out []Event) *decoders {
	workers := min(runtime.GOMAXPROCS(0), 4)
	d := &decoders{out: out, work: make(chan chunk, workers)}
	for w := 0; w < workers; w++ {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			in := newInterner()
			for c := range d.work {
				d.decode(c, in)
			}
		}()
	}
	return d
}

func (d *decoders) send(c chunk) { d.work <- c }

// decode decodes a chunk's lines into out.
func (d *decoders) decode(c chunk, in interner) {
	data, i := c.data, c.first
	for len(data) > 0 && i < len(d.out) { // more lines than counted: the file grew (an error below)
		j := bytes.IndexByte(data, '\n')
		line := data
		if j >= 0 {
			line, data = data[:j], data[j+1:]
		} else {
			data = nil
		}
		if err := decodeLine(line, &d.out[i], in); err != nil {
			d.mu.Lock()
			d.errs = append(d.errs, lineErr{i + 1, err})
			d.mu.Unlock()
		}
		i++
	}
}

// wait waits until every chunk sent is decoded, and returns the errors.
func (d *decoders) wait() []lineErr {
	close(d.work)
	d.wg.Wait()
	return d.errs
}

// readChunks reads the first n lines of r in chunks of whole lines of about
// 4 MiB and sends each. It returns the lines sent (a torn last line, one
// without a newline, counted) and whether the last was torn.
func readChunks(r io.Reader, n int, send func(chunk)) (line int, torn bool, err error) {
	rd := bufio.NewReaderSize(r, 1<<20)
	for {
		buf := make([]byte, 4<<20)
		m, err := io.ReadFull(rd, buf)
		buf = buf[:m]
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			return line, torn, err
		}
		if !eof {
			// Finish the chunk's last line; the next chunk starts clean.
			rest, err := rd.ReadBytes('\n')
			if len(rest) > MaxLineSize {
				return line, torn, fmt.Errorf("line %d or so is longer than %d bytes (allowed: at most %d)", line+bytes.Count(buf, []byte{'\n'})+1, MaxLineSize, MaxLineSize)
			}
			buf = append(buf, rest...)
			if err == io.EOF {
				eof = true
			} else if err != nil {
				return line, torn, err
			} else if _, err := rd.Peek(1); err == io.EOF {
				eof = true
			}
		}
		// A file still being appended to is read as it was when its lines
		// were counted: the lines beyond are left for the next reader.
		lines := bytes.Count(buf, []byte{'\n'})
		if line+lines >= n {
			cut := 0
			for k := 0; k < n-line; k++ {
				cut += bytes.IndexByte(buf[cut:], '\n') + 1
			}
			buf, lines, eof = buf[:cut], n-line, true
		}
		if len(buf) > 0 {
			send(chunk{data: buf, first: line})
			line += lines
			if eof && buf[len(buf)-1] != '\n' {
				line++
				torn = true
			}
		}
		if eof {
			return line, torn, nil
		}
	}
}

// firstError is the first error in file order (line len(out)+1 when there
// is none): a line that is no event, a torn last line, or a line the
// history before it makes impossible.
func firstError(out []Event, errs []lineErr, torn bool) lineErr {
	n := len(out)
	first := lineErr{line: n + 1}
	for _, e := range errs {
		if e.line < first.line {
			first = e
		}
	}
	if torn && n <= first.line {
		first = lineErr{n, errTorn}
	}
	seq := newSequence()
	for i := 0; i+1 < first.line; i++ {
		if err := seq.next(&out[i]); err != nil {
			return lineErr{i + 1, err}
		}
	}
	return first
}

// countLines counts the lines of a file, a last line without newline
// included.
func countLines(f *os.File) (int, error) {
	buf := make([]byte, 1<<20)
	n := 0
	var last byte = '\n'
	for {
		m, err := f.Read(buf)
		if m > 0 {
			n += bytes.Count(buf[:m], []byte{'\n'})
			last = buf[m-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if last != '\n' {
		n++
	}
	return n, nil
}

// decodeLine parses and checks one line into e.
func decodeLine(b []byte, e *Event, in interner) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return errors.New("empty line (allowed: one JSON event per line)")
	}
	if !fastDecode(b, e, in) {
		*e = Event{}
		if err := json.Unmarshal(b, e); err != nil {
			return fmt.Errorf("not a history event: %v", err)
		}
		in.event(e)
	}
	return Validate(e)
}

// SortByTime orders events by time, keeping the given order among equal
// times; it does nothing to a slice already in order. It sorts indices and
// then moves each event once (events are large: moving them in a merge
// sort costs more than the sort).
func SortByTime(evs []Event) {
	sorted := true
	for i := 1; i < len(evs); i++ {
		if evs[i].Time < evs[i-1].Time {
			sorted = false
			break
		}
	}
	if sorted {
		return
	}
	perm := make([]int, len(evs))
	for i := range perm {
		perm[i] = i
	}
	slices.SortFunc(perm, func(a, b int) int {
		if c := cmp.Compare(evs[a].Time, evs[b].Time); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	// Position i must receive evs[perm[i]]: follow each cycle once.
	for i := range perm {
		if perm[i] < 0 || perm[i] == i {
			continue
		}
		tmp := evs[i]
		j := i
		for {
			k := perm[j]
			perm[j] = -1
			if k == i {
				evs[j] = tmp
				break
			}
			evs[j] = evs[k]
			j = k
		}
	}
}

// interner shares the strings that repeat across a history (kinds, ops,
// clients, keys, leases), so a long history costs memory per event, not per
// string.
type interner map[string]string

func newInterner() interner { return interner{} }

func (in interner) s(p *string) {
	if *p == "" {
		return
	}
	if v, ok := in[*p]; ok {
		*p = v
		return
	}
	if len(in) < 1<<20 {
		in[*p] = *p
	}
}

// bytes returns b as a shared string, allocating only the first time.
func (in interner) bytes(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if v, ok := in[string(b)]; ok {
		return v
	}
	s := string(b)
	if len(in) < 1<<20 {
		in[s] = s
	}
	return s
}

func (in interner) event(e *Event) {
	in.s(&e.Kind)
	in.s(&e.Process)
	in.s(&e.Op)
	in.s(&e.Lease)
	in.s(&e.Key)
	in.s(&e.Access)
	in.s(&e.Fault)
	in.s(&e.Target)
}
