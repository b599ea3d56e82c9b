// Package docker is cluster's Docker backend: every node in a container of
// the node image (built locally, see image/), through testcontainers-go and
// the Docker client, beside a local or a remote daemon; and the clean-up of
// what killed runs left (by label). Importing it links the backend into
// package cluster (BackendKind docker, and auto when an engine answers);
// without it a binary runs its nodes as local processes and links no
// container library. simulate imports it; a lockfaulttest user who wants
// containers imports it for its side effect.
package docker

import (
	"context"

	"github.com/lockfault/lockfault/cluster"
)

func init() {
	cluster.SetDocker(cluster.DockerImpl{
		New: func(ctx context.Context, runID string) (cluster.Backend, error) {
			d, err := NewDocker(ctx, runID)
			if err != nil {
				return nil, err // not a typed nil in the interface
			}
			return d, nil
		},
		Available: DockerAvailable,
	})
}

// What package cluster asks of the backend and its nodes, beyond Backend
// and Node.
var (
	_ cluster.PeerServer = (*Docker)(nil)
	_ cluster.ProcStater = (*dockerNode)(nil)
	_ cluster.RemoteShim = remoteNode{}
)
