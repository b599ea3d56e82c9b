// Package lockfault is the domain vocabulary shared by every part of
// lockfault (the scenario format, the cluster, the locks, the suite): what a
// lock needs, the kinds of topology, the node targets a fault can name. It
// holds words only, no behaviour, and imports nothing.
//
// lockfault answers "is my Redis lock actually safe?" by experiment: it runs
// real lock code against real Redis (or etcd) nodes, injects the faults the
// literature argues about, records every operation as a history, checks it
// for mutual-exclusion violations and lost updates, and writes a report.
// The command is cmd/simulate; a Go lock is tested from its own module with
// package lockfaulttest.
package lockfault

// Needs is what a lock needs from the nodes: the endpoints it uses.
type Needs string

// What a lock may need.
const (
	NeedsSingle  Needs = "single"  // one Redis master (found directly or through Sentinel)
	NeedsMasters Needs = "masters" // N independent Redis masters (Redlock)
	NeedsEtcd    Needs = "etcd"    // an etcd cluster
	NeedsCluster Needs = "cluster" // a Redis Cluster, through a cluster client
)

// AllNeeds lists every Needs, in a stable order.
var AllNeeds = []Needs{NeedsSingle, NeedsMasters, NeedsEtcd, NeedsCluster}

// TopologyKind is the shape of a run's nodes.
type TopologyKind string

// The topologies.
const (
	Standalone TopologyKind = "standalone" // one master
	Replicated TopologyKind = "replicated" // a primary with replicas, optionally watched by Sentinels
	Masters    TopologyKind = "masters"    // N independent masters (Redlock)
	Etcd       TopologyKind = "etcd"       // one etcd node
	Cluster    TopologyKind = "cluster"    // a Redis Cluster: N masters sharing the slots, R replicas each
)

// TopologyKinds lists every topology, in a stable order.
var TopologyKinds = []TopologyKind{Standalone, Replicated, Masters, Etcd, Cluster}

// Fits reports whether a lock with these needs can run on a topology: an
// etcd lock on etcd, a cluster lock on a Redis Cluster, any other Redis
// lock on any other Redis topology (a plain client on a cluster meets
// MOVED for most keys).
func (n Needs) Fits(t TopologyKind) bool {
	switch n {
	case NeedsEtcd:
		return t == Etcd
	case NeedsCluster:
		return t == Cluster
	}
	return t != Etcd && t != Cluster
}

// Node targets a fault step can name besides a node's own name (n1, s1, e1).
const (
	TargetPrimary    = "primary"     // the replicated topology's primary (standalone: its one node)
	TargetReplica    = "replica"     // the first replica
	TargetReplicas   = "replicas"    // every replica
	TargetSentinels  = "sentinels"   // every Sentinel
	TargetMaster     = "master"      // the first of the independent masters
	TargetMasters    = "masters"     // every master
	TargetMinority   = "minority"    // the first floor((n-1)/2) masters
	TargetMajority   = "majority"    // the first n/2+1 masters
	TargetEtcd       = "etcd"        // the etcd node
	TargetAll        = "all"         // every data node (faults on clients: every client)
	TargetKeyMaster  = "key-master"  // a cluster's master serving the lock key's slot now
	TargetKeyReplica = "key-replica" // that master's first replica
)

// Client targets a fault step can name besides a client's own name (c1).
const (
	TargetHolder  = "holder"  // the client that holds the lock now
	TargetOthers  = "others"  // every client but the holder
	TargetTrigger = "trigger" // the client whose command fired the await before the step
)
