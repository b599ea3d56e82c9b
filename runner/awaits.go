package runner

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
)

// Awaits that poll the cluster instead of waiting for a workload event.
const (
	// awaitInSync: every running replica has applied everything the
	// primary had written when the step began (its replication offset).
	awaitInSync = "in-sync"
	// awaitCommand: a client's Redis command matched (command-level
	// trigger); the command or its reply is held until the next step ran.
	awaitCommand = "command"
)

// polledAwait reports whether an await kind is checked by polling (it has
// no event to register for).
func polledAwait(kind string) bool { return kind == awaitInSync }

// awaitPolled runs a polled await until it holds or within runs out.
func awaitPolled(ctx context.Context, c *cluster.Cluster, kind string, within time.Duration) error {
	switch kind {
	case awaitInSync:
		return awaitReplicasInSync(ctx, c, within)
	}
	return fmt.Errorf("await %q: not a polled await", kind)
}

// awaitReplicasInSync waits until every running replica's replication
// offset reaches the primary's offset at the start of the wait, so a write
// acknowledged before the step is on every replica.
func awaitReplicasInSync(ctx context.Context, c *cluster.Cluster, within time.Duration) error {
	if c.Topology.Kind == lockfault.Cluster {
		return awaitClusterInSync(ctx, c, within)
	}
	if c.Topology.Kind != lockfault.Replicated {
		return nil
	}
	p := c.Primary()
	if p == nil || !p.Node.Running() {
		return fmt.Errorf("in-sync: no running primary")
	}
	v, err := c.Do(ctx, p, "INFO", "replication")
	if err != nil {
		return fmt.Errorf("in-sync: INFO on primary %s: %w", p.Name, err)
	}
	want, ok := infoInt(v, "master_repl_offset")
	if !ok {
		return fmt.Errorf("in-sync: primary %s reports no master_repl_offset", p.Name)
	}
	deadline := time.Now().Add(within)
	for _, m := range c.WithRole(cluster.RoleReplica) {
		if !m.Node.Running() {
			continue
		}
		for {
			v, err := c.Do(ctx, m, "INFO", "replication")
			s, _ := v.(string)
			got, ok := infoInt(v, "slave_repl_offset")
			if err == nil && ok && got >= want && strings.Contains(s, "master_link_status:up") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("replica %s not in sync within %v (offset %d, primary's %d)", m.Name, within, got, want)
			}
			if err := sleep(ctx, 2*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// awaitClusterInSync waits until every running cluster master's replicas
// (as the master lists them) have reached its offset at the start of the
// wait.
func awaitClusterInSync(ctx context.Context, c *cluster.Cluster, within time.Duration) error {
	deadline := time.Now().Add(within)
	for _, m := range c.WithRole(cluster.RoleMaster) {
		if !m.Node.Running() {
			continue
		}
		v, err := c.Do(ctx, m, "INFO", "replication")
		if err != nil {
			return fmt.Errorf("in-sync: INFO on master %s: %w", m.Name, err)
		}
		want, ok := infoInt(v, "master_repl_offset")
		if !ok {
			return fmt.Errorf("in-sync: master %s reports no master_repl_offset", m.Name)
		}
		for {
			v, err := c.Do(ctx, m, "INFO", "replication")
			behind := err != nil
			s, _ := v.(string)
			for _, line := range strings.Split(s, "\n") {
				// slave0:ip=...,port=...,state=online,offset=N,lag=0
				if !strings.HasPrefix(line, "slave") || !strings.Contains(line, ":ip=") {
					continue
				}
				off := int64(-1)
				for _, kv := range strings.Split(strings.TrimSpace(line[strings.Index(line, ":")+1:]), ",") {
					if o, ok := strings.CutPrefix(kv, "offset="); ok {
						off, _ = strconv.ParseInt(o, 10, 64)
					}
				}
				if !strings.Contains(line, "state=online") || off < want {
					behind = true
				}
			}
			if !behind {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("replicas of %s not in sync within %v (%v)", m.Name, within, err)
			}
			if err := sleep(ctx, 2*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// infoInt reads an integer field of an INFO reply.
func infoInt(v any, field string) (int64, bool) {
	s, _ := v.(string)
	for _, line := range strings.Split(s, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, err := strconv.ParseInt(rest, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
