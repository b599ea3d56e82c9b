package lockimpl

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Info{
		Name: "redlock-cluster",
		Source: "redlock (Redis docs, seeds 001/002) spread over one Redis Cluster's masters, as rueidislock's key majority is: " +
			"one key per master, each behind a hash tag of a slot that master serves, through go-redis's ClusterClient",
		Promises: "mutual exclusion while a majority of the keys' masters keep their keys: a failover of one master to a replica " +
			"that lacks its key costs one key of the majority; the masters are one cluster's, so a fault of the cluster " +
			"(a partition of the cluster bus, a failover storm) is not independent across them",
		Needs:      NeedsCluster,
		Caps:       []string{CapExtend},
		Failpoints: []string{"after-setnx", "after-extend"},
		Options:    []string{"node-timeout", "retry-delay", "retry-jitter"},
	}, newRedlockCluster)
}

// clusterSetupTimeout bounds the slot-map reads of a redlock-cluster's
// construction.
const clusterSetupTimeout = 5 * time.Second

// clusterSetupRetry is the pause between two tries of the slot-map reads.
const clusterSetupRetry = 50 * time.Millisecond

// maxTagTries bounds the hash tags tried for one master: the tags {rl0},
// {rl1}, ... fall in slots spread evenly, so a master serving 1/7 of the
// slots (7 masters) is hit within a few dozen tries.
const maxTagTries = 2000

// newRedlockCluster is redlock with one node per master of the cluster as
// its slot map stands when the lock is made: every node is the same
// cluster client, and node i stores the key behind a hash tag ({rlK}) of a
// slot that master i serves, so the N keys sit on N different masters. A
// key follows its slot: after a failover the client's slot map is reloaded
// (a MOVED comes back as that key's failure, and the next attempt goes to
// the new master), and a slot that migrates takes its key along.
func newRedlockCluster(cfg Config) (Lock, error) {
	r, err := redlockOptions(cfg)
	if err != nil {
		return nil, err
	}
	cc, err := quorumClusterClient(cfg.Endpoints, r.baseTimeout())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterSetupTimeout)
	defer cancel()
	// The slot map is read through the lock's own client, so that its state
	// is loaded before the first request; each read times out after the node
	// timeout (50 ms at most), which a loaded machine's CLUSTER SLOTS can
	// outlast (a hunt's schedules were inconclusive, init refused, in 67 of
	// 70 at a load average of 30): tried again, a short sleep apart, until
	// the setup's time is spent.
	nodes, addrs, err := clusterMasterTags(ctx, cc)
	for err != nil && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(clusterSetupRetry):
			nodes, addrs, err = clusterMasterTags(ctx, cc)
		}
	}
	if err != nil {
		cc.Close()
		return nil, fmt.Errorf("redlock-cluster: %w", err)
	}
	r.addrs, r.quorum = addrs, len(nodes)/2+1
	for _, tag := range nodes {
		r.nodes = append(r.nodes, redlockNode{c: cc, tag: tag})
	}
	return r, nil
}

// clusterMasterTags reads the cluster's slot map and finds, for every
// master (ordered by its announced address), a hash tag whose slot it
// serves. addrs names each node for error messages.
func clusterMasterTags(ctx context.Context, cc *redis.ClusterClient) (tags, addrs []string, err error) {
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("CLUSTER SLOTS: %w", err)
	}
	ranges := map[string][][2]int{}
	for _, s := range slots {
		if len(s.Nodes) == 0 {
			continue
		}
		m := s.Nodes[0].Addr
		ranges[m] = append(ranges[m], [2]int{s.Start, s.End})
	}
	if len(ranges) == 0 {
		return nil, nil, fmt.Errorf("CLUSTER SLOTS names no master")
	}
	masters := make([]string, 0, len(ranges))
	for m := range ranges {
		masters = append(masters, m)
	}
	slices.Sort(masters)
	for _, m := range masters {
		tag, err := tagFor(ctx, cc, ranges[m])
		if err != nil {
			return nil, nil, fmt.Errorf("master %s: %w", m, err)
		}
		tags = append(tags, tag)
		addrs = append(addrs, fmt.Sprintf("%s (slot of %s)", m, tag))
	}
	return tags, addrs, nil
}

// tagFor finds a hash tag in one of the slot ranges, asking the cluster
// for the slots (CLUSTER KEYSLOT) rather than computing them.
func tagFor(ctx context.Context, cc *redis.ClusterClient, ranges [][2]int) (string, error) {
	for k := range maxTagTries {
		tag := fmt.Sprintf("{rl%d}", k)
		slot, err := cc.ClusterKeySlot(ctx, tag).Result()
		if err != nil {
			return "", fmt.Errorf("CLUSTER KEYSLOT: %w", err)
		}
		for _, r := range ranges {
			if int(slot) >= r[0] && int(slot) <= r[1] {
				return tag, nil
			}
		}
	}
	return "", fmt.Errorf("no hash tag of %d tried falls in its slots %v", maxTagTries, ranges)
}

// quorumClusterClient is NewClusterClient with redlock's node timeouts:
// base as the dial, read and write timeout, the per-request deadline from
// the context (the per-node timeout), one dial attempt; it follows no
// redirection and retries nothing.
func quorumClusterClient(ep Endpoints, base time.Duration) (*redis.ClusterClient, error) {
	o, err := clusterOptions(ep, base)
	if err != nil {
		return nil, err
	}
	o.DialerRetries, o.DialTimeout, o.ReadTimeout, o.WriteTimeout = 1, base, base, base
	o.ContextTimeoutEnabled, o.DisableIdentity = true, true
	return redis.NewClusterClient(o), nil
}
