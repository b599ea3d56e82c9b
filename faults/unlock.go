package faults

import (
	"context"
	"fmt"

	"github.com/lockfault/lockfault/lockimpl"
)

func init() {
	Register(Info{Name: "manual-unlock", Targets: "node", Params: []string{"key"},
		Description: "DEL the workload's lock key on the target nodes, as an operator clearing a stuck lock by hand would (claim C1: a key left without a TTL). key=<redis key> overrides the key (default the key the run's lock keeps: lock:<workload resource> for a lock lockfault ships, the resource as is for a library worker's)"}, manualUnlock{})
}

// lockKeyEnv is implemented by an Env that knows the Redis key the run's
// lock keeps (the runner does: lock:<resource> for a lock lockfault ships,
// the resource as is for a library worker's).
type lockKeyEnv interface {
	LockKey() string
}

// manualUnlock deletes the lock key over the harness's admin connection.
// It is not a failure but the manual intervention a stuck lock needs; it
// deletes whatever holds the key, so put it where nobody legitimately holds
// the lock. There is nothing to heal.
type manualUnlock struct{}

func (manualUnlock) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	ms, err := nodes(env, target)
	if err != nil {
		return nil, err
	}
	key, err := lockKey(env, p)
	if err != nil {
		return nil, err
	}
	c := env.Cluster()
	for _, m := range ms {
		v, err := c.Do(ctx, m, "DEL", key)
		if err != nil {
			return nil, fmt.Errorf("manual-unlock %s on %s: %w", key, m.Name, err)
		}
		env.Logf("manual-unlock: DEL %s on %s removed %v key(s)", key, m.Name, v)
	}
	return nil, nil
}

// lockKey is the key manual-unlock deletes: param key, or the workload's.
func lockKey(env Env, p Params) (string, error) {
	key, err := unlockKey(p)
	if err != nil || key != "" {
		return key, err
	}
	if ke, ok := env.(lockKeyEnv); ok && ke.LockKey() != "" {
		return ke.LockKey(), nil
	}
	return lockimpl.KeyFor("order"), nil
}

// effect: the key existed on a target node just before the DEL (a DEL of
// a key nobody held clears nothing).
func (manualUnlock) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	ms, err := nodes(env, target)
	if err != nil {
		return nil
	}
	key, err := lockKey(env, p)
	if err != nil {
		return nil
	}
	var fx effects
	for _, m := range ms {
		v, err := env.Cluster().Do(ctx, m, "EXISTS", key)
		if err != nil {
			fx.add(false, "%s: EXISTS %s: %v", m.Name, key, err)
			continue
		}
		fx.add(fmt.Sprint(v) != "0", "%s held %s before the DEL: EXISTS %v", m.Name, key, v)
	}
	return func(context.Context) Effect { return fx.result() }
}

func (manualUnlock) Validate(p Params) error {
	_, err := unlockKey(p)
	return err
}

// unlockKey reads the optional key param ("" when absent).
func unlockKey(p Params) (string, error) {
	k, ok := p["key"]
	if ok && k == "" {
		return "", paramErr("key", "empty (allowed: a Redis key, or leave key out for lock:<workload resource>)")
	}
	return k, nil
}
