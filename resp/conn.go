package resp

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// conn is one client connection through a tap and its upstream
// connection. The request side queues each command that expects a reply
// before forwarding it; the reply side takes one from the queue for each
// reply (pushes aside).
type conn struct {
	tap  *Tap
	id   uint64
	down net.Conn // to the client

	mu     sync.Mutex
	up     net.Conn // to the node; nil until dialled
	closed bool
	why    string // why the request side stopped queueing commands

	queue      chan *Command
	unpaired   chan struct{} // closed when replies are no longer paired
	unpairOnce sync.Once
}

func (c *conn) note(kind NoteKind, detail string) {
	c.tap.reg.note(Note{At: time.Now(), Client: c.tap.client, Node: c.tap.node, Conn: c.id, Kind: kind, Detail: detail})
}

// stopQueueing records why the request side queues no more commands: the
// reply side then ends pairing when it finds the queue empty.
func (c *conn) stopQueueing(why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.why == "" {
		c.why = why
	}
}

func (c *conn) stopReason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.why
}

// unpair ends pairing on the connection.
func (c *conn) unpair() { c.unpairOnce.Do(func() { close(c.unpaired) }) }

func (c *conn) isUnpaired() bool {
	select {
	case <-c.unpaired:
		return true
	default:
		return false
	}
}

// fire asks the registry whether the command (and reply) fires a trigger,
// and returns the hold to run before the message is forwarded, if any.
func (c *conn) fire(ph Phase, cmd *Command, rep *Reply) func() bool {
	hits := c.tap.reg.match(ph, c.tap.client, c.tap.node, cmd, rep)
	if len(hits) == 0 {
		return nil
	}
	f := Fire{Client: c.tap.client, Node: c.tap.node, Conn: c.id, Phase: ph, Command: cmd, Reply: rep, At: time.Now()}
	var holders []*Armed
	for _, a := range hits {
		if a.t.OnFire != nil {
			holders = append(holders, a)
			continue
		}
		g := f
		g.Nth = a.t.Nth
		a.release(Release{Fire: g, ReleasedAt: f.At})
	}
	if len(holders) == 0 {
		return nil
	}
	return func() bool { return c.hold(f, holders) }
}

// reqSide parses what the client sends.
type reqSide struct {
	c       *conn
	p       RequestParser
	cmd     *Command
	multi   bool       // inside MULTI
	tx      []*Command // queued inside MULTI
	txCut   bool       // more were queued than tx keeps
	proto   int        // as the client asked with HELLO
	queuing bool       // commands are still queued for pairing
}

func (s *reqSide) feed(b []byte) (int, bool, error) {
	n, cmd, err := s.p.Feed(b)
	s.cmd = cmd
	return n, cmd != nil, err
}

func (s *reqSide) failed(err error) {
	s.c.note(NotePassthrough, err.Error())
	s.stop("a request could not be parsed")
}

func (s *reqSide) stop(why string) {
	s.queuing = false
	s.c.stopQueueing(why)
}

func (s *reqSide) message() (func() bool, bool) {
	c, cmd := s.c, s.cmd
	replied := s.track(cmd)
	c.tap.reg.enrich(c.tap.client, cmd)
	var wait func() bool
	if replied && s.queuing && !c.isUnpaired() {
		select {
		case c.queue <- cmd:
		default: // MaxInFlight requests await replies: wait, once what is ahead is forwarded
			wait = func() bool {
				select {
				case c.queue <- cmd:
				case <-c.unpaired:
				case <-c.tap.ctx.Done():
				}
				return false
			}
		}
	}
	hold := c.fire(AtRequest, cmd, nil)
	switch {
	case wait == nil:
		return hold, false
	case hold == nil:
		return wait, false
	}
	return func() bool { wait(); return hold() }, false
}

// track follows the connection's state (MULTI, the protocol, modes without
// paired replies) and reports whether the command gets a reply of its own.
func (s *reqSide) track(c *Command) bool {
	if c.Name == "RESET" { // runs at once, even inside MULTI
		s.multi, s.tx, s.txCut, s.proto = false, nil, false, 2
		return true
	}
	if s.multi {
		switch c.Name {
		case "EXEC":
			s.multi = false
			c.Tx, s.tx = s.tx, nil
			c.Truncated, s.txCut = c.Truncated || s.txCut, false
			for _, q := range c.Tx {
				c.Write = c.Write || q.Write
				for _, k := range q.Keys {
					if !slices.Contains(c.Keys, k) {
						c.Keys = append(c.Keys, k)
					}
				}
			}
		case "DISCARD":
			s.multi, s.tx, s.txCut = false, nil, false
		case "MULTI", "WATCH", "QUIT": // answered at once, not queued
		default:
			c.Queued = true
			if len(s.tx) < MaxTxKept {
				s.tx = append(s.tx, c)
			} else {
				s.txCut = true
			}
		}
		return true
	}
	switch {
	case c.Name == "MULTI":
		s.multi = true
	case c.Name == "HELLO":
		if v := protover(c); v != 0 {
			s.proto = v
		}
	case subscribes[c.Name]:
		if s.proto == 3 {
			return false // RESP3: the replies are pushes
		}
		s.stop("RESP2 pub/sub: replies are messages from now on")
	case c.Name == "MONITOR":
		s.stop("MONITOR: replies are a feed from now on")
	case c.Name == "CLIENT" && c.Sub == "REPLY" && len(c.Argv) > 2 && !strings.EqualFold(c.Argv[2], "ON"):
		s.stop("CLIENT REPLY " + strings.ToUpper(c.Argv[2]) + ": replies are skipped")
	case c.Name == "SYNC" || c.Name == "PSYNC":
		s.stop(c.Name + ": a replication stream follows")
	}
	return true
}

// protover is the protocol a HELLO asks for (2 or 3), 0 if none.
func protover(c *Command) int {
	if len(c.Argv) < 2 {
		return 0
	}
	if v, err := strconv.Atoi(c.Argv[1]); err == nil && (v == 2 || v == 3) {
		return v
	}
	return 0
}

// repSide parses what the node sends and pairs replies with commands.
type repSide struct {
	c     *conn
	p     ReplyParser
	rep   *Reply
	proto int // as the node confirmed
}

func (s *repSide) feed(b []byte) (int, bool, error) {
	n, rep, err := s.p.Feed(b)
	s.rep = rep
	return n, rep != nil, err
}

func (s *repSide) failed(err error) {
	s.c.note(NotePassthrough, err.Error())
	s.c.unpair()
}

func (s *repSide) message() (func() bool, bool) {
	c, r := s.c, s.rep
	if r.Kind == KindPush {
		return nil, false
	}
	var cmd *Command
	select {
	case cmd = <-c.queue:
	default:
	}
	if cmd == nil {
		why := c.stopReason()
		if why == "" {
			why = "a reply arrived that no request awaits"
		}
		c.note(NoteUnpaired, why)
		c.unpair()
		return nil, true
	}
	switch cmd.Name {
	case "HELLO":
		v := protover(cmd)
		if r.Kind != KindError && v != 0 {
			s.proto = v
		} else if r.Kind == KindError && v != 0 && v != s.proto {
			// The request side took the protocol asked for; it is not.
			c.note(NoteUnpaired, "HELLO "+strconv.Itoa(v)+" failed: "+r.Code)
			c.unpair()
			return nil, true
		}
	case "RESET":
		s.proto = 2
	}
	return c.fire(AtReply, cmd, r), false
}
