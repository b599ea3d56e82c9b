package cluster

import (
	"fmt"

	"github.com/lockfault/lockfault"
)

// NodeTargets lists every node target a fault step may name in a topology:
// the roles (lockfault.Target*) that apply to it and every node's name. It
// is the one list: scenarios are checked against it before a run, and
// Resolve finds the same names in the running cluster.
func NodeTargets(t Topology) []string {
	names := func(prefix string, n int) []string {
		var out []string
		for i := 1; i <= n; i++ {
			out = append(out, fmt.Sprintf("%s%d", prefix, i))
		}
		return out
	}
	switch t.Kind {
	case lockfault.Standalone:
		return []string{lockfault.TargetPrimary, lockfault.TargetAll, "n1"}
	case lockfault.Replicated:
		out := append([]string{lockfault.TargetPrimary, lockfault.TargetReplica, lockfault.TargetReplicas, lockfault.TargetAll}, names("n", 1+t.Replicas)...)
		if t.Sentinels > 0 {
			out = append(out, lockfault.TargetSentinels)
			out = append(out, names("s", t.Sentinels)...)
		}
		return out
	case lockfault.Masters:
		return append([]string{lockfault.TargetMaster, lockfault.TargetMasters, lockfault.TargetMinority, lockfault.TargetMajority, lockfault.TargetAll}, names("n", t.Masters)...)
	case lockfault.Etcd:
		return []string{lockfault.TargetEtcd, lockfault.TargetAll, "e1"}
	case lockfault.Cluster:
		// master and masters name the nodes serving slots now (a failover
		// changes them), minority and majority of those; key-master the
		// one serving the lock key's slot, key-replica its first replica.
		out := []string{lockfault.TargetMaster, lockfault.TargetMasters, lockfault.TargetMinority, lockfault.TargetMajority, lockfault.TargetKeyMaster}
		if t.Replicas > 0 {
			out = append(out, lockfault.TargetReplica, lockfault.TargetReplicas, lockfault.TargetKeyReplica)
		}
		return append(append(out, lockfault.TargetAll), names("n", t.Masters*(1+t.Replicas))...)
	}
	return nil
}
