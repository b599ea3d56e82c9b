package faults

import "context"

func init() {
	Register(Info{Name: "clone-client", Targets: "client",
		Description: "start a second worker under the client's identity (the client id its lock is given), as a process restarted under the same name while the old one still lives, paused or cut off; it runs rounds as <client>-clone until healed"}, cloneClient{})
}

type cloneClient struct{}

func (cloneClient) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	cls, err := env.Clients(target)
	if err != nil {
		return nil, err
	}
	var heals []Heal
	healAll := func(ctx context.Context) error {
		var first error
		for i := len(heals) - 1; i >= 0; i-- {
			if err := heals[i](ctx); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	for _, c := range cls {
		h, err := env.Clone(ctx, c.Name())
		if err != nil {
			healAll(ctx)
			return nil, err
		}
		heals = append(heals, h)
	}
	return healAll, nil
}

// effect: a clone's process runs beside each target client.
func (cloneClient) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	cls, err := env.Clients(target)
	if err != nil {
		return nil
	}
	return func(context.Context) Effect {
		var fx effects
		for _, c := range cls {
			clone := c.Name() + "-clone"
			cs, err := env.Clients(clone)
			if err != nil || len(cs) == 0 {
				fx.add(false, "%s: no clone (%v)", c.Name(), err)
				continue
			}
			s := cs[0].Proc()
			fx.add(s.Pid != 0, "%s runs: %v", clone, s)
		}
		return fx.result()
	}
}
