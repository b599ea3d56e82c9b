package faults

import (
	"context"
	"fmt"
	"sync/atomic"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/lockfault/lockfault/cluster"
)

func init() {
	Register(Info{Name: "partition-peer", Targets: "node", Params: []string{"mode"},
		Description: "cut the node off from its replicas and Sentinels (the replication link); clients still reach it. mode=reset (default: every connection reset at its first byte, as a refused one) or drop (bytes silently dropped)"}, partition{peer: true})
	Register(Info{Name: "partition-client", Targets: "node", Params: []string{"clients", "mode", "direction"},
		Description: "cut clients off from the node. clients=<client target> (default all); mode=reset|drop; direction=both|to-node|from-node (one way: drop only requests or only replies)"}, partition{})
}

// partition resets every connection through toxiproxy proxies (mode=reset),
// or adds a timeout toxic with timeout 0 that swallows data (mode=drop),
// optionally one way.
type partition struct{ peer bool }

// resetLink makes every connection through a proxy reset at its first
// byte, either way, until healed: what a client or a node sees of a
// refused connection, a send that fails at once. The proxy stays enabled,
// its port bound: nodes and clients dial it by address, and a disabled
// proxy's port can be taken meanwhile (by another process, or by an
// outgoing connection's local port), so that it could not be enabled
// again. A dial into the cut link is accepted and reset, and the
// harness's toxiproxy server counts it (Net.Accepted): the effect check
// sees a link used while the fault lasted.
var resetSeq atomic.Uint64

func resetLink(px *toxiclient.Proxy, name string) ([]Heal, error) {
	var heals []Heal
	// Its own toxics: two cuts of one link at once (partitions of
	// overlapping clients) each heal their own.
	seq := resetSeq.Add(1)
	for _, stream := range []string{"upstream", "downstream"} {
		toxic := fmt.Sprintf("%s-%s-%d", name, stream, seq)
		if _, err := px.AddToxic(toxic, "reset_peer", stream, 1, toxiclient.Attributes{"timeout": 0}); err != nil {
			return heals, err
		}
		heals = append(heals, func(context.Context) error { return px.RemoveToxic(toxic) })
	}
	return heals, nil
}

// links are the proxies a partition cuts.
func (pt partition) links(env Env, target string, p Params) ([]string, error) {
	ms, err := nodes(env, target)
	if err != nil {
		return nil, err
	}
	var names []string
	if pt.peer {
		for _, m := range ms {
			names = append(names, cluster.PeerProxy(m.Name))
		}
		return names, nil
	}
	return clientLinks(env, ms, p)
}

// clientLinks are the proxies from the clients of param clients (default
// all) to the nodes.
func clientLinks(env Env, ms []*cluster.Member, p Params) ([]string, error) {
	ct := p["clients"]
	if ct == "" {
		ct = "all"
	}
	cls, err := env.Clients(ct)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, cl := range cls {
		for _, m := range ms {
			names = append(names, cluster.ClientProxy(cl.Name(), m.Name))
		}
	}
	return names, nil
}

// effect: the links cut were in use: connections were open on them when
// they were cut (reset resets them at their next byte; drop swallows what
// they carry), or a client dialed one while the cut lasted.
func (pt partition) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	names, err := pt.links(env, target, p)
	if err != nil {
		return nil
	}
	return linkUsed(env, names)
}

func (pt partition) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	names, err := pt.links(env, target, p)
	if err != nil {
		return nil, err
	}
	c := env.Cluster()
	mode, streams, err := partitionParams(p)
	if err != nil {
		return nil, err
	}
	var heals []Heal
	for _, n := range names {
		px, ok := c.Net.Get(n)
		if !ok {
			return healAll(heals), fmt.Errorf("no proxy %s", n)
		}
		switch mode {
		case "reset":
			hs, err := resetLink(px, "partition")
			heals = append(heals, hs...)
			if err != nil {
				return healAll(heals), err
			}
		case "drop":
			for _, s := range streams {
				name := "partition-" + s
				if _, err := px.AddToxic(name, "timeout", s, 1, toxiclient.Attributes{"timeout": 0}); err != nil {
					return healAll(heals), err
				}
				heals = append(heals, func(context.Context) error { return px.RemoveToxic(name) })
			}
		}
	}
	return healAll(heals), nil
}

func (partition) Validate(p Params) error {
	_, _, err := partitionParams(p)
	return err
}

func partitionParams(p Params) (mode string, streams []string, err error) {
	mode = p["mode"]
	if mode == "" {
		mode = "reset"
	}
	if mode != "reset" && mode != "drop" {
		return "", nil, paramErr("mode", "%q is not allowed (allowed: reset, drop)", mode)
	}
	if err := clientsParam(p); err != nil {
		return "", nil, err
	}
	if streams, err = directionStreams(p["direction"]); err != nil {
		return "", nil, err
	}
	if mode == "reset" && len(streams) == 1 {
		return "", nil, paramErr("direction", "a one-way partition needs mode=drop (allowed with reset: both)")
	}
	return mode, streams, nil
}
