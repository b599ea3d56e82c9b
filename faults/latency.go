package faults

import (
	"context"
	"fmt"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/lockfault/lockfault/cluster"
)

func init() {
	Register(Info{Name: "latency", Targets: "node", Params: []string{"latency", "jitter", "clients", "direction"},
		Description: "add latency=<duration> (± jitter=<duration>) on the links from clients (clients=<client target>, default all) to the node, each way or direction=to-node|from-node"}, latency{})
}

type latency struct{}

func (latency) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	ms, err := nodes(env, target)
	if err != nil {
		return nil, err
	}
	lat, err := p.Duration("latency", 0)
	if err != nil || lat <= 0 {
		return nil, fmt.Errorf("param latency: want a positive duration such as 200ms (%v)", err)
	}
	jit, err := p.Duration("jitter", 0)
	if err != nil {
		return nil, err
	}
	ct := p["clients"]
	if ct == "" {
		ct = "all"
	}
	cls, err := env.Clients(ct)
	if err != nil {
		return nil, err
	}
	var streams []string
	switch p["direction"] {
	case "", "both":
		streams = []string{"upstream", "downstream"}
	case "to-node":
		streams = []string{"upstream"}
	case "from-node":
		streams = []string{"downstream"}
	default:
		return nil, fmt.Errorf("param direction: %q is not allowed (allowed: both, to-node, from-node)", p["direction"])
	}
	c := env.Cluster()
	var heals []Heal
	for _, cl := range cls {
		for _, m := range ms {
			px, ok := c.Net.Get(cluster.ClientProxy(cl.Name(), m.Name))
			if !ok {
				return healAll(heals), fmt.Errorf("no proxy from %s to %s", cl.Name(), m.Name)
			}
			for _, s := range streams {
				name := "latency-" + s
				if _, err := px.AddToxic(name, "latency", s, 1, toxiclient.Attributes{"latency": lat.Milliseconds(), "jitter": jit.Milliseconds()}); err != nil {
					return healAll(heals), err
				}
				heals = append(heals, func(context.Context) error { return px.RemoveToxic(name) })
			}
		}
	}
	return healAll(heals), nil
}
