package resp

import (
	"errors"
	"fmt"
)

// ReplyParser finds the replies in a server's byte stream: every RESP2 and
// RESP3 type, including streamed strings ($?) and streamed aggregates (*?
// %? ~?). Attributes (|) are skipped as part of the value they annotate; a
// push (>) is returned like a reply but with KindPush, since it answers no
// request.
//
// Bytes may arrive in any pieces. Nothing is buffered but header lines and
// the kept text of the top-level value. The zero value is ready to use.
// After an error the parser is spent: every later Feed returns it.
type ReplyParser struct {
	state  repState
	line   lineReader
	typ    byte
	stack  []frame
	bulk   int64
	crlf   int
	stream bool // inside a streamed string: the next part is a ";n" chunk
	top    bool // the value being read is the reply itself (summarised)
	r      Reply
	text   []byte // kept text of the reply
	size   int64
	err    error
}

type repState uint8

const (
	repType repState = iota
	repLine
	repBulk
	repBulkEnd
)

// frame is an aggregate being read.
type frame struct {
	typ  byte
	left int64 // values still to read; -1 for a streamed aggregate
	seen int64 // values read
}

// Feed consumes bytes of b up to the end of the next reply or push. It
// returns how many bytes it consumed and the reply if one ended there; nil
// means b ran out in the middle of one.
func (p *ReplyParser) Feed(b []byte) (int, *Reply, error) {
	if p.err != nil {
		return 0, nil, p.err
	}
	n := 0
	for n < len(b) {
		k, done, err := p.step(b[n:])
		n += k
		p.size += int64(k)
		if err != nil {
			p.err = fmt.Errorf("reply byte %d: %w", p.size, err)
			return n, nil, p.err
		}
		if done {
			r := p.r
			r.finish(p.text)
			r.Size = p.size
			p.size, p.r = 0, Reply{}
			return n, &r, nil
		}
	}
	return n, nil, nil
}

// step advances by one state and returns the bytes it consumed and whether
// a reply ended.
func (p *ReplyParser) step(b []byte) (int, bool, error) {
	switch p.state {
	case repType:
		return 1, false, p.typeByte(b[0])
	case repLine:
		k, ended, err := p.line.read(b)
		if err != nil || !ended {
			return k, false, err
		}
		line, whole, err := p.line.text(false)
		if err != nil {
			return k, false, err
		}
		done, err := p.endLine(line, whole)
		return k, done, err
	case repBulk:
		m := int(min(int64(len(b)), p.bulk))
		p.keepText(b[:m])
		if p.bulk -= int64(m); p.bulk == 0 {
			p.crlf, p.state = 2, repBulkEnd
		}
		return m, false, nil
	case repBulkEnd:
		if want := "\r\n"[2-p.crlf]; b[0] != want {
			return 0, false, errors.New(`string not ended by "\r\n"`)
		}
		if p.crlf--; p.crlf > 0 {
			return 1, false, nil
		}
		if p.stream {
			p.state = repType
			return 1, false, nil
		}
		return 1, p.valueDone(), nil
	}
	return 0, false, errors.New("reply parser in an unknown state")
}

// typeByte starts a value.
func (p *ReplyParser) typeByte(t byte) error {
	depth := len(p.stack)
	keep, max := MaxHeaderLen, MaxHeaderLen
	if p.stream { // the next chunk of a streamed string
		if t != ';' {
			return fmt.Errorf("streamed string: expected ';', got %q", t)
		}
		p.typ, p.state = t, repLine
		p.line.reset(keep, max)
		return nil
	}
	switch {
	case t == '+' || t == '-' || t == ',' || t == '(':
		keep, max = 0, MaxSimpleLen
		if depth == 0 {
			keep = MaxReplyText
		}
	case t == ':' || t == '#' || t == '_':
	case t == '$' || t == '!' || t == '=' || t == '*' || t == '%' || t == '~' || t == '|':
	case t == '>':
		if depth > 0 {
			return errors.New("push inside an aggregate")
		}
	case t == '.':
		if depth == 0 || p.stack[depth-1].left >= 0 {
			return errors.New("'.' outside a streamed aggregate")
		}
	default:
		return fmt.Errorf("unknown type byte %q", t)
	}
	p.typ = t
	p.top = depth == 0 && t != '|'
	if p.top {
		p.r, p.text = Reply{Kind: kindOf(t)}, p.text[:0]
	}
	p.line.reset(keep, max)
	p.state = repLine
	return nil
}

// endLine finishes a value's line: the whole of a simple value, the header
// of the others.
func (p *ReplyParser) endLine(line []byte, whole bool) (bool, error) {
	switch p.typ {
	case '+', '-', ',', '(':
		if whole && len(line) == 0 && (p.typ == ',' || p.typ == '(') {
			return false, fmt.Errorf("empty %q value", p.typ)
		}
		p.keepText(line)
		return p.valueDone(), nil
	case ':':
		v, err := parseInt(line)
		if err != nil || !whole {
			return false, fmt.Errorf("integer: bad value %q", clip(line))
		}
		p.setInt(v)
		return p.valueDone(), nil
	case '#':
		if len(line) != 1 || (line[0] != 't' && line[0] != 'f') {
			return false, fmt.Errorf("boolean: bad value %q", clip(line))
		}
		if line[0] == 't' {
			p.setInt(1)
		}
		return p.valueDone(), nil
	case '_':
		if len(line) != 0 {
			return false, fmt.Errorf("null: bad value %q", clip(line))
		}
		return p.valueDone(), nil
	case '.':
		if len(line) != 0 {
			return false, fmt.Errorf("end of a streamed aggregate: bad value %q", clip(line))
		}
		f := p.stack[len(p.stack)-1]
		p.stack = p.stack[:len(p.stack)-1]
		if len(p.stack) == 0 {
			p.r.Len = f.seen
			if f.typ == '%' {
				p.r.Len /= 2
			}
		}
		return p.valueDone(), nil
	case ';':
		v, err := parseInt(line)
		if err != nil || v < 0 || v > MaxBulkLen {
			return false, fmt.Errorf("streamed string chunk: bad length %q (allowed: 0 to %d)", clip(line), MaxBulkLen)
		}
		if v == 0 {
			p.stream = false
			return p.valueDone(), nil
		}
		if len(p.stack) == 0 {
			p.r.Len += v
		}
		p.bulk, p.state = v, repBulk
		return false, nil
	case '$', '!', '=':
		return p.bulkHeader(line)
	}
	return p.aggregateHeader(line)
}

// bulkHeader starts a bulk, blob error or verbatim string.
func (p *ReplyParser) bulkHeader(line []byte) (bool, error) {
	if p.typ == '$' && string(line) == "?" {
		p.stream, p.state = true, repType
		return false, nil
	}
	v, err := parseInt(line)
	switch {
	case err != nil:
		return false, fmt.Errorf("%q length: %w", p.typ, err)
	case v == -1 && p.typ == '$':
		if p.top {
			p.r.Kind = KindNull
		}
		return p.valueDone(), nil
	case v < 0 || v > MaxBulkLen:
		return false, fmt.Errorf("%q length %d (allowed: 0 to %d)", p.typ, v, MaxBulkLen)
	}
	if p.top {
		p.r.Len = v
	}
	p.bulk, p.state = v, repBulk
	if v == 0 {
		p.crlf, p.state = 2, repBulkEnd
	}
	return false, nil
}

// aggregateHeader starts an array, map, set, attribute or push.
func (p *ReplyParser) aggregateHeader(line []byte) (bool, error) {
	if len(p.stack) >= MaxDepth {
		return false, fmt.Errorf("aggregates nested deeper than %d", MaxDepth)
	}
	if string(line) == "?" && (p.typ == '*' || p.typ == '%' || p.typ == '~') {
		p.stack = append(p.stack, frame{typ: p.typ, left: -1})
		p.state = repType
		return false, nil
	}
	v, err := parseInt(line)
	switch {
	case err != nil:
		return false, fmt.Errorf("%q count: %w", p.typ, err)
	case v == -1 && p.typ == '*':
		if p.top {
			p.r.Kind = KindNull
		}
		return p.valueDone(), nil
	case v < 0 || v > MaxAggregateLen:
		return false, fmt.Errorf("%q count %d (allowed: 0 to %d)", p.typ, v, MaxAggregateLen)
	}
	if p.top {
		p.r.Len = v
	}
	if p.typ == '%' || p.typ == '|' {
		v *= 2
	}
	if v > 0 {
		p.stack = append(p.stack, frame{typ: p.typ, left: v})
		p.state = repType
		return false, nil
	}
	if p.typ == '|' { // no attributes: still no value
		p.state = repType
		return false, nil
	}
	return p.valueDone(), nil
}

// valueDone records that a value ended and reports whether it ended the
// reply. An attribute is not a value: the one it annotates follows it.
func (p *ReplyParser) valueDone() bool {
	p.state = repType
	for len(p.stack) > 0 {
		f := &p.stack[len(p.stack)-1]
		f.seen++
		if f.left < 0 {
			return false
		}
		if f.left--; f.left > 0 {
			return false
		}
		typ := f.typ
		p.stack = p.stack[:len(p.stack)-1]
		if typ == '|' {
			return false
		}
	}
	return true
}

func (p *ReplyParser) setInt(v int64) {
	if p.top {
		p.r.Int = v
	}
}

// keepText keeps the start of the reply's own text.
func (p *ReplyParser) keepText(b []byte) {
	if !p.top {
		return
	}
	if room := MaxReplyText - len(p.text); room > 0 {
		p.text = append(p.text, b[:min(room, len(b))]...)
	}
}
