package faults

import (
	"context"
	"strconv"
	"syscall"
	"time"

	"github.com/lockfault/lockfault/worker"
)

func init() {
	Register(Info{Name: "crash-client", Targets: "client",
		Description: "SIGKILL the client's process; it does not release anything (restart_crashed in the workload brings it back)"}, crashClient{})
	Register(Info{Name: "failpoint", Targets: "client", Params: []string{"name", "action", "ms", "count"},
		Description: "arm a failpoint in the client: at the named point (" + failpointNames + ") it crashes (action=crash), sleeps ms (sleep) or stops the whole process for ms (stop: a stop-the-world pause). count=N fires on the N-th hit. Heal disarms it"}, failpoint{})
}

// failpointNames are the points the built-in locks and workers hit.
const failpointNames = "after-setnx, after-get, release-after-get, after-extend, before-acquire, before-release, cs-after-read, cs-before-write"

type crashClient struct{}

func (crashClient) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	cls, err := env.Clients(target)
	if err != nil {
		return nil, err
	}
	_, err = applyClients(cls, func(c Client) error { return c.Signal(syscall.SIGKILL) }, nil)
	return nil, err
}

// effect: each client's process (its pid before the kill) is gone.
func (crashClient) effect(ctx context.Context, env Env, target string, p Params) func(context.Context) Effect {
	cls, err := env.Clients(target)
	if err != nil {
		return nil
	}
	before := map[string]int{}
	for _, c := range cls {
		before[c.Name()] = c.Proc().Pid
	}
	return func(ctx context.Context) Effect {
		// SIGKILL takes a moment to land: wait (at most 2 s) for every
		// process killed to be gone before judging.
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			pending := false
			for _, c := range cls {
				if was := before[c.Name()]; was != 0 && c.Proc().Pid == was {
					pending = true
				}
			}
			if !pending || sleepCtx(ctx, time.Millisecond) != nil {
				break
			}
		}
		var fx effects
		for _, c := range cls {
			was, now := before[c.Name()], c.Proc()
			switch {
			case was == 0:
				fx.add(false, "%s had no process to kill", c.Name())
			case now.Pid == 0:
				fx.add(true, "%s: pid %d killed", c.Name(), was)
			default:
				fx.add(now.Pid != was, "%s: pid %d, now %v", c.Name(), was, now)
			}
		}
		return fx.result()
	}
}

type failpoint struct{}

func (failpoint) Inject(ctx context.Context, env Env, target string, p Params) (Heal, error) {
	cls, err := env.Clients(target)
	if err != nil {
		return nil, err
	}
	cmd, err := failpointCommand(p)
	if err != nil {
		return nil, err
	}
	off := func(c Client) error { return c.Send(worker.Command{Cmd: "failpoint", Name: cmd.Name, Action: "off"}) }
	cls, err = applyClients(cls, func(c Client) error { return c.Send(cmd) }, off)
	if err != nil {
		return nil, err
	}
	return func(context.Context) error {
		healClients(cls, off) // a client that died since needs no disarming
		return nil
	}, nil
}

func (failpoint) Validate(p Params) error {
	_, err := failpointCommand(p)
	return err
}

// failpointCommand turns params into the worker's failpoint command.
func failpointCommand(p Params) (worker.Command, error) {
	cmd := worker.Command{Cmd: "failpoint", Name: p["name"], Action: p["action"]}
	if cmd.Name == "" {
		return cmd, paramErr("name", "missing; which failpoint (allowed: %s, or one the worker declares)", failpointNames)
	}
	switch cmd.Action {
	case "crash", "sleep", "stop":
	default:
		return cmd, paramErr("action", "%q is not allowed (allowed: crash, sleep, stop)", cmd.Action)
	}
	if v, ok := p["ms"]; ok {
		// A duration, or a bare number of milliseconds.
		var d time.Duration
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			d = time.Duration(max(min(n, int64(MaxDuration/time.Millisecond)+1), -1)) * time.Millisecond
		} else if d, err = time.ParseDuration(v); err != nil {
			return cmd, paramErr("ms", "%q is neither a duration nor a number of milliseconds (allowed: 0ms to %v)", v, MaxDuration)
		}
		if d < 0 || d > MaxDuration {
			return cmd, paramErr("ms", "%q is out of range (allowed: 0ms to %v)", v, MaxDuration)
		}
		cmd.Ms = d.Milliseconds()
	}
	n, err := countParam(p, "count", worker.MaxFailpointCount)
	if err != nil {
		return cmd, err
	}
	cmd.Count = n
	return cmd, nil
}
