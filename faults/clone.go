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
