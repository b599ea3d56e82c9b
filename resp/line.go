package resp

import (
	"bytes"
	"errors"
	"fmt"
)

// lineReader collects one line that may arrive in pieces, keeping at most
// keep bytes of it and refusing one longer than max. Only the kept bytes
// are copied: the rest of a long line is counted and skipped.
type lineReader struct {
	kept []byte
	n    int  // bytes of the line seen so far, its '\n' excluded
	last byte // the byte before the '\n' so far
	keep int
	max  int
}

func (l *lineReader) reset(keep, max int) {
	l.kept, l.n, l.last, l.keep, l.max = l.kept[:0], 0, 0, keep, max
}

// read consumes b up to and including the line's '\n' and reports whether
// the line ended there.
func (l *lineReader) read(b []byte) (int, bool, error) {
	i := bytes.IndexByte(b, '\n')
	part := b
	if i >= 0 {
		part = b[:i]
	}
	// max+1: the line's '\r' is only known to be one when '\n' follows.
	// The error comes at the first byte too many, wherever the pieces end.
	if over := l.n + len(part) - (l.max + 1); over > 0 {
		return len(part) - over + 1, false, fmt.Errorf("line longer than %d bytes", l.max)
	}
	if room := l.keep - len(l.kept); room > 0 {
		l.kept = append(l.kept, part[:min(room, len(part))]...)
	}
	if len(part) > 0 {
		l.last = part[len(part)-1]
	}
	l.n += len(part)
	if i < 0 {
		return len(b), false, nil
	}
	return i + 1, true, nil
}

// text returns the ended line without its ending and whether it was kept
// whole. A RESP line ends in "\r\n"; with crOptional a bare "\n" is
// accepted too, as Redis does for inline commands.
func (l *lineReader) text(crOptional bool) ([]byte, bool, error) {
	n := l.n
	if l.last == '\r' && n > 0 {
		n--
	} else if !crOptional {
		return nil, false, errors.New(`line not ended by "\r\n"`)
	}
	if n > l.max {
		return nil, false, fmt.Errorf("line longer than %d bytes", l.max)
	}
	if len(l.kept) > n {
		return l.kept[:n], true, nil
	}
	return l.kept, len(l.kept) == n, nil
}

// parseInt parses a RESP integer as Redis's string2ll does: an optional
// '-', then digits without leading zeros ("0" alone), within int64.
func parseInt(b []byte) (int64, error) {
	s := b
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 19 || (s[0] == '0' && (len(s) > 1 || neg)) {
		return 0, fmt.Errorf("bad integer %q", clip(b))
	}
	var v uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad integer %q", clip(b))
		}
		v = v*10 + uint64(c-'0')
	}
	if (!neg && v > 1<<63-1) || (neg && v > 1<<63) {
		return 0, fmt.Errorf("integer %q out of range", clip(b))
	}
	if neg {
		return -int64(v), nil
	}
	return int64(v), nil
}

// clip shortens bytes quoted in an error message.
func clip(b []byte) []byte {
	const max = 40
	if len(b) > max {
		return b[:max]
	}
	return b
}
