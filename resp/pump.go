package resp

import (
	"errors"
	"io"
	"net"
)

// side is one direction's parsing and pairing: it tells the pump where
// messages end and what must happen at each end.
type side interface {
	// feed consumes bytes up to the end of the next message.
	feed(b []byte) (n int, done bool, err error)
	// message is called at each message's end. before, if not nil, must
	// run after everything ahead of the message was forwarded and before
	// the message is (it may block: a hold). passthrough asks that the
	// stream be forwarded untouched from this message on.
	message() (before func() (drop bool), passthrough bool)
	// failed is called once, on a parse error; the stream is forwarded
	// untouched from then on.
	failed(err error)
}

// pump forwards one direction of a connection, message by message.
//
// A message that fits in the buffer is forwarded whole, once it ended; a
// longer one streams through, and only the part that ends it is held back
// (the peer cannot act on a message before its last byte). Bytes are never
// changed, dropped or reordered: after a parse error they are copied as
// they come.
type pump struct {
	src, dst net.Conn
	s        side
	buf      []byte
}

// run forwards until src ends: nil at its end of file, else the read or
// write error.
func (p *pump) run() error {
	buf := p.buf
	end := 0    // bytes in buf
	parsed := 0 // bytes of buf given to the side
	start := 0  // where the unfinished message began in buf; -1: before buf
	raw := false
	for {
		if end == len(buf) { // an unfinished message fills buf: stream it
			if err := write(p.dst, buf[:end]); err != nil {
				return err
			}
			end, parsed, start = 0, 0, -1
		}
		n, rerr := p.src.Read(buf[end:])
		end += n
		w := 0 // bytes of buf forwarded
		for !raw && parsed < end {
			k, done, err := p.s.feed(buf[parsed:end])
			parsed += k
			if err == nil && !done && k == 0 {
				err = errors.New("parser made no progress")
			}
			if err != nil {
				p.s.failed(err)
				raw = true
				break
			}
			if !done {
				continue
			}
			before, passthrough := p.s.message()
			if passthrough {
				raw = true
				break
			}
			if before != nil {
				from := max(start, w)
				if err := write(p.dst, buf[w:from]); err != nil {
					return err
				}
				w = from
				if before() {
					return errDropped // the message never goes on; its connection ends
				}
			}
			start = parsed
		}
		cut := end // forward everything but an unfinished message
		if !raw && start != end {
			cut = max(start, w)
		}
		if rerr != nil {
			cut = end // src ended: what came of the message goes on
		}
		if err := write(p.dst, buf[w:cut]); err != nil {
			return err
		}
		copy(buf, buf[cut:end])
		end -= cut
		parsed = end
		if start >= cut {
			start -= cut
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return nil
			}
			return rerr
		}
	}
}

// errDropped ends a connection whose held request was dropped.
var errDropped = errors.New("a held request was dropped")

func write(dst net.Conn, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, err := dst.Write(b)
	return err
}
