package faults

import (
	"context"
	"fmt"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/lockfault/lockfault/cluster"
)

func init() {
	Register(Info{Name: "partition-peer", Targets: "node", Params: []string{"mode"},
		Description: "cut the node off from its replicas and Sentinels (the replication link); clients still reach it. mode=reset (default: connections refused) or drop (bytes silently dropped)"}, partition{peer: true})
	Register(Info{Name: "partition-client", Targets: "node", Params: []string{"clients", "mode", "direction"},
		Description: "cut clients off from the node. clients=<client target> (default all); mode=reset|drop; direction=both|to-node|from-node (one way: drop only requests or only replies)"}, partition{})
}

// partition disables toxiproxy proxies (mode=reset), or adds a timeout
// toxic with timeout 0 that swallows data (mode=drop), optionally one way.
type partition struct{ peer bool }

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
// they were cut (reset closes them; drop swallows what they carry).
func (pt partition) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	names, err := pt.links(env, target, p)
	if err != nil {
		return nil
	}
	return linkUsed(env, names, linkConns(env, names))
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
			if err := px.Disable(); err != nil {
				return healAll(heals), err
			}
			heals = append(heals, func(context.Context) error { return px.Enable() })
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
