package docker

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
)

// A cluster start interrupted halfway on Docker leaves no container,
// network, directory or proxy behind (the process backend's half is
// cluster's TestClusterStartInterrupted).
func TestClusterStartInterruptedDocker(t *testing.T) {
	runID := testRunID(t)
	d := newTestDocker(t, runID)
	nw, err := cluster.NewNet(d.ProxyHost(), strings.ReplaceAll(t.Name(), "/", "-"))
	if err != nil {
		t.Fatal(err)
	}
	// Well inside the start (containers are being created): the 6 nodes
	// take a few seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := cluster.Start(ctx, d, nw, cluster.Topology{Kind: lockfault.Cluster, Masters: 3, Replicas: 1, NodeTimeout: time.Second})
	if err == nil {
		c.Close(context.Background())
		t.Fatal("the cluster started within 2s on docker: nothing was interrupted (make the interruption earlier)")
	}
	t.Logf("start error: %v", err)
	if names := nw.Names(""); len(names) != 0 {
		t.Errorf("proxies left: %v", names)
	}
	if _, err := os.Stat(d.dir); !os.IsNotExist(err) {
		t.Errorf("run directory %s left behind: %v", d.dir, err)
	}
	if cs, ns := runObjects(t, runID); cs != 0 || ns != 0 {
		t.Errorf("%d containers and %d networks of run %s left behind", cs, ns, runID)
	}
}
