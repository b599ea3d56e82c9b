package resp

import (
	"fmt"
	"strings"
	"testing"
)

// framed is what a parser made of a stream: each message's summary, where
// it ended, and the error that stopped it (if any).
type framed struct {
	msgs []string
	ends []int
	err  string
	used int
}

func (f framed) String() string {
	return fmt.Sprintf("msgs=%q ends=%v err=%q used=%d", f.msgs, f.ends, f.err, f.used)
}

func (f framed) equal(g framed) bool { return f.String() == g.String() }

// frameRequests feeds data to a fresh RequestParser in pieces of the given
// sizes (cycled; 0 means all at once).
func frameRequests(data []byte, sizes ...int) framed {
	var p RequestParser
	return frameWith(data, sizes, func(b []byte) (int, string, bool, error) {
		n, c, err := p.Feed(b)
		if c == nil {
			return n, "", false, err
		}
		return n, cmdSummary(c), true, err
	})
}

// frameReplies is frameRequests for a ReplyParser.
func frameReplies(data []byte, sizes ...int) framed {
	var p ReplyParser
	return frameWith(data, sizes, func(b []byte) (int, string, bool, error) {
		n, r, err := p.Feed(b)
		if r == nil {
			return n, "", false, err
		}
		return n, replySummary(r), true, err
	})
}

func frameWith(data []byte, sizes []int, feed func([]byte) (int, string, bool, error)) framed {
	var f framed
	off, piece := 0, 0
	for off < len(data) {
		size := len(data) - off
		if len(sizes) > 0 && sizes[piece%len(sizes)] > 0 {
			size = min(size, sizes[piece%len(sizes)])
		}
		piece++
		chunk := data[off : off+size]
		for len(chunk) > 0 {
			n, msg, done, err := feed(chunk)
			if n < 0 || n > len(chunk) {
				f.err = fmt.Sprintf("consumed %d of %d", n, len(chunk))
				return f
			}
			off += n
			chunk = chunk[n:]
			if err != nil {
				f.err = err.Error()
				f.used = off
				return f
			}
			if done {
				f.msgs = append(f.msgs, msg)
				f.ends = append(f.ends, off)
			} else if n == 0 {
				f.err = "no progress"
				return f
			}
		}
	}
	f.used = off
	return f
}

func cmdSummary(c *Command) string {
	s := fmt.Sprintf("%s argc=%d argv=%q keys=%q size=%d", c.FullName(), c.Argc, c.Argv, c.Keys, c.Size)
	if c.SHA != "" {
		s += " sha=" + c.SHA
	}
	if c.Truncated {
		s += " truncated"
	}
	if c.Inline {
		s += " inline"
	}
	return s
}

func replySummary(r *Reply) string {
	return fmt.Sprintf("%s code=%q text=%q int=%d len=%d size=%d", r.Kind, r.Code, r.Text, r.Int, r.Len, r.Size)
}

// chunkings are the ways each stream is cut in the table tests.
var chunkings = [][]int{{0}, {1}, {2}, {3}, {7}, {1, 5, 2}, {64}}

// resp encodes a command as an array of bulk strings.
func resp(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// checkFraming checks what frame makes of in, whole and in every chunking:
// the messages want (summaries), and an error containing err ("" none).
func checkFraming(t *testing.T, frame func([]byte, ...int) framed, in string, want []string, err string) {
	t.Helper()
	whole := frame([]byte(in))
	if strings.Join(whole.msgs, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages:\n got %q\nwant %q", whole.msgs, want)
	}
	if (err == "") != (whole.err == "") || !strings.Contains(whole.err, err) {
		t.Errorf("error %q, want one containing %q", whole.err, err)
	}
	if err == "" && whole.used != len(in) {
		t.Errorf("consumed %d of %d bytes", whole.used, len(in))
	}
	for _, sizes := range chunkings {
		if got := frame([]byte(in), sizes...); !got.equal(whole) {
			t.Errorf("in pieces of %v:\n got %v\nwant %v", sizes, got, whole)
		}
	}
}
