package history

import "math"

// fastDecode parses one event line without reflection, for the common
// shape the Writer produces: a flat object of known keys whose strings are
// plain ASCII without escapes and whose numbers are integers. It returns
// false for anything else (an unknown key, an escape, a float, null where a
// number is expected, trailing bytes...): the caller then decodes the line
// with encoding/json, which is the reference. e must be zero on entry.
func fastDecode(b []byte, e *Event, in interner) bool {
	p := decoder{b: b}
	p.ws()
	if !p.eat('{') {
		return false
	}
	p.ws()
	if p.eat('}') {
		return p.end()
	}
	for {
		p.ws()
		key, ok := p.str()
		if !ok {
			return false
		}
		p.ws()
		if !p.eat(':') {
			return false
		}
		p.ws()
		if !p.field(key, e, in) {
			return false
		}
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			return p.end()
		}
		return false
	}
}

// field decodes the value of the field named key into e: false for a
// field Event does not have or a value of the wrong shape.
func (p *decoder) field(key []byte, e *Event, in interner) bool {
	var ok bool
	switch string(key) {
	case "seq":
		ok = p.int(&e.Seq)
	case "t":
		ok = p.int(&e.Time)
	case "op_id":
		ok = p.int(&e.OpID)
	case "fence":
		ok = p.int(&e.Fence)
	case "validity_ms":
		ok = p.int(&e.ValidityMs)
	case "valid_until":
		ok = p.int(&e.ValidUntil)
	case "cycle":
		var v int64
		ok = p.int(&v) && v >= math.MinInt32 && v <= math.MaxInt32
		e.Cycle = int(v)
	case "value":
		e.Value, ok = p.optInt()
	case "read":
		e.Read, ok = p.optInt()
	case "wrote":
		e.Wrote, ok = p.optInt()
	case "rejected":
		ok = p.bool(&e.Rejected)
	case "kind":
		ok = p.istr(&e.Kind, in)
	case "process":
		ok = p.istr(&e.Process, in)
	case "op":
		ok = p.istr(&e.Op, in)
	case "lease":
		ok = p.istr(&e.Lease, in)
	case "key":
		ok = p.istr(&e.Key, in)
	case "access":
		ok = p.istr(&e.Access, in)
	case "fault":
		ok = p.istr(&e.Fault, in)
	case "target":
		ok = p.istr(&e.Target, in)
	case "error":
		ok = p.sstr(&e.Error)
	case "token":
		ok = p.sstr(&e.Token)
	case "detail":
		ok = p.sstr(&e.Detail)
	default:
		return false
	}
	return ok
}

type decoder struct {
	b []byte
	i int
}

func (p *decoder) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *decoder) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *decoder) end() bool {
	p.ws()
	return p.i == len(p.b)
}

// str reads a string of printable ASCII without escapes, returning its
// bytes (a view into the line).
func (p *decoder) str() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			return s, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

func (p *decoder) istr(dst *string, in interner) bool {
	s, ok := p.str()
	if !ok {
		return false
	}
	*dst = in.bytes(s)
	return true
}

func (p *decoder) sstr(dst *string) bool {
	s, ok := p.str()
	if !ok {
		return false
	}
	*dst = string(s)
	return true
}

func (p *decoder) int(dst *int64) bool {
	neg := p.eat('-')
	start := p.i
	var v uint64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		d := uint64(p.b[p.i] - '0')
		if v > (math.MaxUint64-d)/10 {
			return false
		}
		v = v*10 + d
		p.i++
	}
	n := p.i - start
	if n == 0 || (n > 1 && p.b[start] == '0') {
		return false // no digits, or a leading zero (not JSON)
	}
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case '.', 'e', 'E':
			return false
		}
	}
	switch {
	case !neg && v <= math.MaxInt64:
		*dst = int64(v)
	case neg && v <= 1<<63:
		*dst = -int64(v-1) - 1
	default:
		return false
	}
	return true
}

func (p *decoder) optInt() (*int64, bool) {
	if p.i+4 <= len(p.b) && string(p.b[p.i:p.i+4]) == "null" {
		p.i += 4
		return nil, true
	}
	var v int64
	if !p.int(&v) {
		return nil, false
	}
	return &v, true
}

func (p *decoder) bool(dst *bool) bool {
	switch {
	case p.i+4 <= len(p.b) && string(p.b[p.i:p.i+4]) == "true":
		p.i += 4
		*dst = true
	case p.i+5 <= len(p.b) && string(p.b[p.i:p.i+5]) == "false":
		p.i += 5
		*dst = false
	default:
		return false
	}
	return true
}
