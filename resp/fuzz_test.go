package resp

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// piecesOf turns a fuzzed number into a cycle of piece sizes.
func piecesOf(cut uint16) []int {
	return []int{1 + int(cut%17), 1 + int(cut>>8)%5, 1 + int(cut>>4)%64}
}

// FuzzRequest: whatever the bytes and however they are cut, the parser
// finds the same commands at the same places and fails at the same byte;
// without an error it consumes everything; a command it found, encoded
// again as an array, parses back to the same arguments.
func FuzzRequest(f *testing.F) {
	f.Add([]byte(resp("SET", "k", "v")+"get k\r\n"), uint16(3))
	f.Add([]byte("*2\r\n$4\r\nPING\r\n"), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		whole := frameRequests(data)
		if got := frameRequests(data, piecesOf(cut)...); !got.equal(whole) {
			t.Fatalf("in pieces %v:\n got %v\nwant %v", piecesOf(cut), got, whole)
		}
		if whole.err == "" && whole.used != len(data) {
			t.Fatalf("consumed %d of %d bytes without an error", whole.used, len(data))
		}
		if !slices.IsSorted(whole.ends) {
			t.Fatalf("message ends out of order: %v", whole.ends)
		}
		var p RequestParser
		for rest := data; len(rest) > 0; {
			n, c, err := p.Feed(rest)
			rest = rest[n:]
			if err != nil || c == nil {
				break
			}
			if c.Truncated {
				continue
			}
			var q RequestParser
			n2, c2, err := q.Feed([]byte(resp(c.Argv...)))
			if err != nil || c2 == nil || !slices.Equal(c2.Argv, c.Argv) || c2.FullName() != c.FullName() || c2.SHA != c.SHA {
				t.Fatalf("%q encoded again: %v %v (%d bytes)", c.Argv, c2, err, n2)
			}
		}
	})
}

// FuzzReply: the same for replies, and the streaming parser agrees with a
// plain recursive one on where each reply ends, its kind, and whether the
// stream is bad.
func FuzzReply(f *testing.F) {
	f.Add([]byte("+OK\r\n*2\r\n:1\r\n$1\r\nx\r\n"), uint16(5))
	f.Add([]byte("|1\r\n+a\r\n:1\r\n>2\r\n+x\r\n_\r\n$?\r\n;1\r\na\r\n;0\r\n"), uint16(2))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		whole := frameReplies(data)
		if got := frameReplies(data, piecesOf(cut)...); !got.equal(whole) {
			t.Fatalf("in pieces %v:\n got %v\nwant %v", piecesOf(cut), got, whole)
		}
		if whole.err == "" && whole.used != len(data) {
			t.Fatalf("consumed %d of %d bytes without an error", whole.used, len(data))
		}
		var ends []int
		var kinds []Kind
		var p ReplyParser
		var streamErr error
		for off := 0; off < len(data); {
			n, r, err := p.Feed(data[off:])
			off += n
			if err != nil {
				streamErr = err
				break
			}
			if r != nil {
				ends, kinds = append(ends, off), append(kinds, r.Kind)
			}
		}
		refEnds, refKinds, refErr := refReplies(data)
		if !slices.Equal(ends, refEnds) || !slices.Equal(kinds, refKinds) || (streamErr == nil) != (refErr == nil) {
			t.Fatalf("streaming: ends %v kinds %v err %v\nreference: ends %v kinds %v err %v", ends, kinds, streamErr, refEnds, refKinds, refErr)
		}
	})
}

// refReplies parses whole replies recursively (the reference for
// FuzzReply): the end and kind of each, and an error for a bad stream
// (nil if the data merely stops inside one).
func refReplies(b []byte) ([]int, []Kind, error) {
	var ends []int
	var kinds []Kind
	for i := 0; i < len(b); {
		next, k, err := refValue(b, i, 0)
		if errors.Is(err, errIncomplete) {
			return ends, kinds, nil
		}
		if err != nil {
			return ends, kinds, err
		}
		ends, kinds, i = append(ends, next), append(kinds, k), next
	}
	return ends, kinds, nil
}

var errIncomplete = errors.New("incomplete")

// refLine reads the line at b[i:] (type byte excluded) of at most max bytes.
func refLine(b []byte, i, max int) ([]byte, int, error) {
	j := bytes.IndexByte(b[i:], '\n')
	if j < 0 {
		if len(b)-i > max+1 {
			return nil, 0, errors.New("line too long")
		}
		return nil, 0, errIncomplete
	}
	l := b[i : i+j]
	if len(l) == 0 || l[len(l)-1] != '\r' {
		return nil, 0, errors.New("no CR")
	}
	if l = l[:len(l)-1]; len(l) > max {
		return nil, 0, errors.New("line too long")
	}
	return l, i + j + 1, nil
}

// refBulk reads n bytes and "\r\n" at b[i:].
func refBulk(b []byte, i int, n int64) (int, error) {
	if int64(len(b)-i) < n+2 {
		if int64(len(b)-i) > n && b[i+int(n)] != '\r' || int64(len(b)-i) > n+1 && b[i+int(n)+1] != '\n' {
			return 0, errors.New("bulk not ended")
		}
		return 0, errIncomplete
	}
	if b[i+int(n)] != '\r' || b[i+int(n)+1] != '\n' {
		return 0, errors.New("bulk not ended")
	}
	return i + int(n) + 2, nil
}

// refValue reads the value at b[i:], inside depth aggregates.
func refValue(b []byte, i, depth int) (int, Kind, error) {
	if i >= len(b) {
		return 0, 0, errIncomplete
	}
	t := b[i]
	i++
	switch t {
	case '+', '-', ',', '(':
		l, next, err := refLine(b, i, MaxSimpleLen)
		if err == nil && len(l) == 0 && (t == ',' || t == '(') {
			err = errors.New("empty")
		}
		if t == '+' && depth == 0 && string(l) == "QUEUED" {
			return next, KindQueued, err
		}
		return next, kindOf(t), err
	case ':', '#', '_':
		l, next, err := refLine(b, i, MaxHeaderLen)
		if err != nil {
			return 0, 0, err
		}
		switch {
		case t == ':':
			_, err = parseInt(l)
		case t == '#' && string(l) != "t" && string(l) != "f":
			err = errors.New("bad boolean")
		case t == '_' && len(l) != 0:
			err = errors.New("bad null")
		}
		return next, kindOf(t), err
	case '$', '!', '=':
		l, next, err := refLine(b, i, MaxHeaderLen)
		if err != nil {
			return 0, 0, err
		}
		if t == '$' && string(l) == "?" {
			for {
				if next >= len(b) {
					return 0, 0, errIncomplete
				}
				if b[next] != ';' {
					return 0, 0, errors.New("expected ;")
				}
				l, after, err := refLine(b, next+1, MaxHeaderLen)
				if err != nil {
					return 0, 0, err
				}
				n, err := parseInt(l)
				if err != nil || n < 0 || n > MaxBulkLen {
					return 0, 0, fmt.Errorf("bad chunk %q", l)
				}
				if n == 0 {
					return after, KindBulk, nil
				}
				if next, err = refBulk(b, after, n); err != nil {
					return 0, 0, err
				}
			}
		}
		n, err := parseInt(l)
		switch {
		case err != nil:
			return 0, 0, err
		case n == -1 && t == '$':
			return next, KindNull, nil
		case n < 0 || n > MaxBulkLen:
			return 0, 0, errors.New("bad length")
		}
		next, err = refBulk(b, next, n)
		return next, kindOf(t), err
	case '*', '%', '~', '|', '>':
		if t == '>' && depth > 0 {
			return 0, 0, errors.New("nested push")
		}
		if depth >= MaxDepth {
			return 0, 0, errors.New("too deep")
		}
		l, next, err := refLine(b, i, MaxHeaderLen)
		if err != nil {
			return 0, 0, err
		}
		if string(l) == "?" && (t == '*' || t == '%' || t == '~') {
			for {
				if next >= len(b) {
					return 0, 0, errIncomplete
				}
				if b[next] == '.' {
					l, after, err := refLine(b, next+1, MaxHeaderLen)
					if err == nil && len(l) != 0 {
						err = errors.New("bad end")
					}
					return after, kindOf(t), err
				}
				if next, _, err = refValue(b, next, depth+1); err != nil {
					return 0, 0, err
				}
			}
		}
		n, err := parseInt(l)
		switch {
		case err != nil:
			return 0, 0, err
		case n == -1 && t == '*':
			return next, KindNull, nil
		case n < 0 || n > MaxAggregateLen:
			return 0, 0, errors.New("bad count")
		}
		if t == '%' || t == '|' {
			n *= 2
		}
		for range n {
			if next, _, err = refValue(b, next, depth+1); err != nil {
				return 0, 0, err
			}
		}
		if t == '|' { // not a value: the one it annotates follows
			return refValue(b, next, depth)
		}
		return next, kindOf(t), nil
	case '.':
		return 0, 0, errors.New("'.' outside a streamed aggregate")
	}
	return 0, 0, fmt.Errorf("unknown type %q", t)
}
