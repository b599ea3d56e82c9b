package docker

import (
	"context"
	"fmt"

	"github.com/lockfault/lockfault/cluster"
	"github.com/moby/moby/client"
)

func (n *dockerNode) ProcState(ctx context.Context) (cluster.ProcState, error) {
	if n.d.remote != nil {
		return cluster.ProcState{}, fmt.Errorf("a remote Docker daemon's processes are not in this host's /proc")
	}
	ins, err := n.d.cli.ContainerInspect(ctx, n.id, client.ContainerInspectOptions{})
	if err != nil {
		return cluster.ProcState{}, fmt.Errorf("docker: inspect %s: %w", n.spec.Name, err)
	}
	st := ins.Container.State
	if st == nil || !st.Running || st.Pid == 0 {
		return cluster.ProcState{}, nil
	}
	s := cluster.ProcState{Pid: st.Pid, State: cluster.ReadProcState(st.Pid)}
	if st.Paused {
		s.State = "paused"
	}
	return s, nil
}
