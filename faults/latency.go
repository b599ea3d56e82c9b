package faults

import (
	"context"
	"fmt"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
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
	lat, jit, streams, err := latencyParams(p)
	if err != nil {
		return nil, err
	}
	names, err := clientLinks(env, ms, p)
	if err != nil {
		return nil, err
	}
	c := env.Cluster()
	var heals []Heal
	for _, n := range names {
		px, ok := c.Net.Get(n)
		if !ok {
			return healAll(heals), fmt.Errorf("no proxy %s", n)
		}
		for _, s := range streams {
			name := "latency-" + s
			if _, err := px.AddToxic(name, "latency", s, 1, toxiclient.Attributes{"latency": lat.Milliseconds(), "jitter": jit.Milliseconds()}); err != nil {
				return healAll(heals), err
			}
			heals = append(heals, func(context.Context) error { return px.RemoveToxic(name) })
		}
	}
	return healAll(heals), nil
}

func (latency) Validate(p Params) error {
	_, _, _, err := latencyParams(p)
	return err
}

// The latency toxic works in whole milliseconds.
var (
	latencySpec = durationSpec{name: "latency", required: true, min: time.Millisecond, max: MaxDuration, example: "200ms"}
	jitterSpec  = durationSpec{name: "jitter", max: MaxDuration, example: "50ms"}
)

func latencyParams(p Params) (lat, jit time.Duration, streams []string, err error) {
	if lat, err = latencySpec.duration(p); err != nil {
		return
	}
	if jit, err = jitterSpec.duration(p); err != nil {
		return
	}
	if err = clientsParam(p); err != nil {
		return
	}
	streams, err = directionStreams(p["direction"])
	return
}

// directionStreams maps a direction param to toxiproxy streams.
func directionStreams(dir string) ([]string, error) {
	switch dir {
	case "", "both":
		return []string{"upstream", "downstream"}, nil
	case "to-node":
		return []string{"upstream"}, nil
	case "from-node":
		return []string{"downstream"}, nil
	}
	return nil, paramErr("direction", "%q is not allowed (allowed: both, to-node, from-node)", dir)
}

// effect: the links slowed were in use: connections were open on them when
// the toxic was added (it holds every byte they carry).
func (latency) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	ms, err := nodes(env, target)
	if err != nil {
		return nil
	}
	names, err := clientLinks(env, ms, p)
	if err != nil {
		return nil
	}
	return linkUsed(env, names)
}
