package cluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// The cluster bus, one link per pair of nodes.
//
// A node announces one bus port, which every other node dials: one proxy
// there would carry every node's gossip to it, and cutting it would cut
// them all. So the announced bus port is a bus router's, in the harness: it
// tells the dialling node by its source address (on processes each cluster
// node sends from an address of its own, --bind-source-addr 127.77.0.k;
// on Docker its address on the run network) and forwards the connection
// through the toxiproxy proxy of that pair, BusLink(from, to), to the
// node's bus port. A fault cuts a pair in either direction by disabling
// its proxy (a connection through a disabled one is closed at once): a
// master can be cut off from the rest of the cluster both ways, hearing
// nobody and heard by nobody.

// BusLink names the proxy carrying from's bus connections to node to.
func BusLink(from, to string) string { return busProxyPrefix + from + ">" + to }

// busSourceNet is the process backend's source addresses of cluster
// nodes: node nK sends from 127.77.0.K.
const busSourceNet = "127.77.0."

// busRouter is node to's announced bus port.
type busRouter struct {
	c  *Cluster
	to *Member
	ln net.Listener

	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
}

// newBusRouter listens on host for node to's bus.
func newBusRouter(c *Cluster, to *Member, host string) (*busRouter, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("bus router for %s: %w", to.Name, err)
	}
	r := &busRouter{c: c, to: to, ln: ln, conns: map[net.Conn]bool{}}
	r.wg.Add(1)
	go r.serve()
	return r, nil
}

// Addr is the address the node announces as its bus.
func (r *busRouter) Addr() string { return r.ln.Addr().String() }

func (r *busRouter) serve() {
	defer r.wg.Done()
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return
		}
		if !r.track(in, true) {
			in.Close()
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.track(in, false)
			r.forward(in)
		}()
	}
}

// track adds or removes a connection; false once the router is closed.
func (r *busRouter) track(c net.Conn, add bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if add {
		if r.closed {
			return false
		}
		r.conns[c] = true
	} else {
		delete(r.conns, c)
	}
	return true
}

// forward sends in through the proxy of its pair; a connection from an
// address no node sends from, or through a pair cut off, is closed.
func (r *busRouter) forward(in net.Conn) {
	defer in.Close()
	host, _, _ := net.SplitHostPort(in.RemoteAddr().String())
	from := r.c.busSource(host)
	if from == nil {
		return
	}
	up, err := busAddr(r.to.Node)
	if err != nil {
		return
	}
	p, err := r.c.Net.Proxy(BusLink(from.Name, r.to.Name), up)
	if err != nil {
		return
	}
	out, err := net.DialTimeout("tcp", p.Listen, time.Second)
	if err != nil {
		return
	}
	defer out.Close()
	if !r.track(out, true) {
		return
	}
	defer r.track(out, false)
	done := make(chan struct{}, 2)
	go func() { io.Copy(out, in); done <- struct{}{} }()
	go func() { io.Copy(in, out); done <- struct{}{} }()
	<-done // either side gone (a cut pair closes its side): close both
}

// close stops the router and every connection through it.
func (r *busRouter) close() error {
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	err := r.ln.Close()
	r.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// busSource is the member whose bus connections come from host.
func (c *Cluster) busSource(host string) *Member {
	for _, m := range c.DataNodes() {
		if sourceAddr(m.Node) == host {
			return m
		}
	}
	return nil
}

// sourceAddr is the address a node's outgoing connections come from.
func sourceAddr(n Node) string {
	if s, ok := n.(interface{ SourceAddr() string }); ok {
		return s.SourceAddr()
	}
	args := n.Spec().Args
	for i, a := range args {
		if a == "--bind-source-addr" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// busSourceArgs are the process backend's flags that give cluster node
// name its own source address.
func busSourceArgs(name string) []string {
	return []string{"--bind-source-addr", busSourceNet + strings.TrimPrefix(name, "n")}
}
