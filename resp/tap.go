package resp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Tap forwards the connections of one client to one node, on a loopback
// port of its own, and fires the registry's triggers on what passes.
type Tap struct {
	reg          *Registry
	client, node string
	ln           net.Listener
	ctx          context.Context // done when the tap closes
	cancel       context.CancelFunc
	wg           sync.WaitGroup // every goroutine the tap started

	mu       sync.Mutex
	upstream string
	conns    map[uint64]*conn
	next     uint64
	closed   bool
}

// Listen starts a tap on 127.0.0.1 (a port the kernel picks) that
// forwards to upstream. client and node label what it fires and notes.
func Listen(reg *Registry, client, node, upstream string) (*Tap, error) {
	switch {
	case reg == nil:
		return nil, errors.New("resp.Listen: nil registry")
	case client == "" || node == "":
		return nil, fmt.Errorf("resp.Listen: client %q, node %q: both must be named", client, node)
	}
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		return nil, fmt.Errorf("resp.Listen: upstream %q: %v (allowed: host:port)", upstream, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &Tap{reg: reg, client: client, node: node, ln: ln, ctx: ctx, cancel: cancel,
		upstream: upstream, conns: map[uint64]*conn{}}
	t.wg.Add(1)
	go t.accept()
	return t, nil
}

// Addr is the address clients connect to.
func (t *Tap) Addr() string { return t.ln.Addr().String() }

// Conns is how many connections the tap serves now.
func (t *Tap) Conns() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}

// Upstream is where new connections are forwarded.
func (t *Tap) Upstream() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.upstream
}

// SetUpstream re-points the tap (a failover): connections made from now
// on go to addr; those already open stay with the node they reached.
func (t *Tap) SetUpstream(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("upstream %q: %v (allowed: host:port)", addr, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.upstream = addr
	return nil
}

// Close stops the tap: it closes the listener and every connection,
// releases every hold, and returns once every goroutine it started
// (OnFire callbacks included) has returned.
func (t *Tap) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	conns := make([]*conn, 0, len(t.conns))
	for _, c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	t.cancel()
	err := t.ln.Close()
	for _, c := range conns {
		c.close()
	}
	t.wg.Wait()
	return err
}

func (t *Tap) accept() {
	defer t.wg.Done()
	for {
		down, err := t.ln.Accept()
		if err != nil {
			if t.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure (out of descriptors): wait a little.
			select {
			case <-t.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			down.Close()
			return
		}
		t.next++
		c := &conn{tap: t, id: t.next, down: down,
			queue: make(chan *Command, MaxInFlight), unpaired: make(chan struct{})}
		if len(t.conns) >= MaxConns {
			t.mu.Unlock()
			c.note(NoteRefused, fmt.Sprintf("%d connections already open", MaxConns))
			down.Close()
			continue
		}
		t.conns[c.id] = c
		upstream := t.upstream
		t.wg.Add(1)
		t.mu.Unlock()
		go c.serve(upstream)
	}
}

// serve dials the upstream and runs both directions until both ended.
func (c *conn) serve(upstream string) {
	t := c.tap
	defer t.wg.Done()
	defer func() {
		c.close()
		t.mu.Lock()
		delete(t.conns, c.id)
		t.mu.Unlock()
	}()
	d := net.Dialer{Timeout: DialTimeout}
	up, err := d.DialContext(t.ctx, "tcp", upstream)
	if err != nil {
		if t.ctx.Err() == nil {
			c.note(NoteRefused, "upstream: "+err.Error())
		}
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		up.Close()
		return
	}
	c.up = up
	c.mu.Unlock()

	replies := &pump{src: up, dst: c.down, s: &repSide{c: c, proto: 2}, buf: make([]byte, ReadBufSize)}
	requests := &pump{src: c.down, dst: up, s: &reqSide{c: c, proto: 2, queuing: true}, buf: make([]byte, ReadBufSize)}
	t.wg.Add(1)
	repDone := make(chan struct{})
	go func() {
		defer t.wg.Done()
		defer close(repDone)
		c.ended(replies, replies.run())
		c.unpair() // a request waiting for room in the queue waits no more
	}()
	c.ended(requests, requests.run())
	<-repDone
}

// ended handles the end of one direction: at the source's end of file the
// destination is half-closed and the other direction has LingerLimit to
// finish; on an error both are closed.
func (c *conn) ended(p *pump, err error) {
	if err != nil {
		c.close()
		return
	}
	if cw, ok := p.dst.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	p.dst.SetReadDeadline(time.Now().Add(LingerLimit))
}

// close closes both sides of the connection.
func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.down.Close()
	if c.up != nil {
		c.up.Close()
	}
}
