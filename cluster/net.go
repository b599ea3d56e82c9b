package cluster

import (
	"fmt"
	"net"
	"strings"
	"sync"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
)

// Net is the network layer: real toxiproxy servers driven only through
// their official HTTP client. Every path to a node, client or peer, goes
// through one of their proxies, so partitions and latency are toxiproxy
// operations. The server is the toxiproxy-server program the harness starts
// once per process (toxiapi.go), except for the proxies between nodes when the backend's nodes cannot reach
// the harness (a remote Docker daemon): those are in a toxiproxy server the
// backend runs beside its nodes (see NetFor).
type Net struct {
	Client *toxiclient.Client // the harness's server
	host   string             // address its proxies listen on
	prefix string             // proxy names of this run start with it

	peer     *toxiclient.Client // the backend's server for peer proxies; nil: Client
	peerHost string             // address its proxies listen on

	accepts *acceptLog // the harness's server's accepted connections

	mu      sync.Mutex
	proxies map[string]*toxiclient.Proxy
}

// NewNet connects to the harness's toxiproxy server; proxies listen on host and are
// named with the run's prefix. A backend whose nodes cannot reach the
// harness needs NetFor.
func NewNet(host, runID string) (*Net, error) {
	s, err := toxiproxyServer()
	if err != nil {
		return nil, err
	}
	return &Net{Client: toxiclient.NewClient(s.addr), host: host, prefix: runID + ":", accepts: s.accepts, proxies: map[string]*toxiclient.Proxy{}}, nil
}

// PeerServer is implemented by backends whose nodes cannot reach the
// harness (the Docker backend with a remote daemon).
type PeerServer interface {
	// PeerToxiproxy returns the API address (reached from the harness) of
	// a toxiproxy server beside the nodes, and the host its proxies listen
	// on (reached from the nodes); ok is false when there is none.
	PeerToxiproxy() (api, host string, ok bool)
}

// NetFor connects to the toxiproxy servers for backend b's nodes: the
// harness's one, its proxies listening on b.ProxyHost(), and the backend's own
// for the peer proxies when it runs one. Proxies are named with the run's id.
func NetFor(b Backend, runID string) (*Net, error) {
	n, err := NewNet(b.ProxyHost(), runID)
	if err != nil {
		return nil, err
	}
	if ps, ok := b.(PeerServer); ok {
		if api, host, ok := ps.PeerToxiproxy(); ok {
			n.peer, n.peerHost = toxiclient.NewClient(api), host
		}
	}
	return n, nil
}

// Proxy creates (or returns) the named proxy forwarding to upstream, on a
// port of its own. Its listen address is stable for the whole run. A peer
// proxy (see PeerProxy) is made on the backend's server when there is one.
func (n *Net) Proxy(name, upstream string) (*toxiclient.Proxy, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p, ok := n.proxies[name]; ok {
		return p, nil
	}
	cl, host := n.Client, n.host
	if n.peer != nil && isPeerProxy(name) {
		cl, host = n.peer, n.peerHost
	}
	p, err := cl.CreateProxy(n.prefix+name, net.JoinHostPort(host, "0"), upstream)
	if err != nil {
		return nil, fmt.Errorf("create proxy %s: %w", name, err)
	}
	n.proxies[name] = p
	return p, nil
}

// Get returns an existing proxy.
func (n *Net) Get(name string) (*toxiclient.Proxy, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p, ok := n.proxies[name]
	return p, ok
}

// Names lists this run's proxies matching a prefix ("" for all).
func (n *Net) Names(prefix string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for k := range n.proxies {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// SetUpstream re-points a proxy (after a node restarted elsewhere).
func (n *Net) SetUpstream(name, upstream string) error {
	p, ok := n.Get(name)
	if !ok {
		return fmt.Errorf("no proxy %s", name)
	}
	if p.Upstream == upstream {
		return nil
	}
	p.Upstream = upstream
	return p.Save()
}

// Renew replaces a proxy whose port was taken while it was disabled (its
// Enable failed: "address already in use") by one on a new port, with the
// same name and upstream. Only for proxies nobody outside the harness
// dials by address (a cluster's bus links: the bus routers look them up
// by name).
func (n *Net) Renew(name string) error {
	n.mu.Lock()
	p, ok := n.proxies[name]
	if ok {
		delete(n.proxies, name)
	}
	n.mu.Unlock()
	if !ok {
		return fmt.Errorf("no proxy %s", name)
	}
	if err := p.Delete(); err != nil {
		return err
	}
	_, err := n.Proxy(name, p.Upstream)
	return err
}

// Heal enables every proxy and removes every toxic.
func (n *Net) Heal() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.proxies {
		ts, err := p.Toxics()
		if err != nil {
			return err
		}
		for _, t := range ts {
			if err := p.RemoveToxic(t.Name); err != nil {
				return err
			}
		}
		if !p.Enabled {
			if err := p.Enable(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close deletes this run's proxies, closing their listeners.
func (n *Net) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var first error
	for k, p := range n.proxies {
		if err := p.Delete(); err != nil && first == nil {
			first = err
		}
		delete(n.proxies, k)
	}
	if n.accepts != nil {
		n.accepts.forget(n.prefix)
	}
	return first
}
