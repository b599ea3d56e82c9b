// Package cluster owns node lifecycle: it starts redis-server, redis-sentinel
// and etcd nodes through a Backend (local processes here; Docker containers
// in package cluster/docker, linked by importing it), puts a toxiproxy proxy
// in front of every node, wires topologies, and tears everything down.
// Nothing it starts outlives Close.
package cluster

import (
	"context"
	"syscall"
)

// Kinds of node.
const (
	KindRedis    = "redis"
	KindSentinel = "sentinel"
	KindEtcd     = "etcd"
)

// NodeSpec says what to run.
type NodeSpec struct {
	Name string   // unique within a run: "n1", "s1", "e1"
	Kind string   // KindRedis, KindSentinel or KindEtcd
	Args []string // extra command-line arguments (redis-server --flag value ..., etcd --flag=value)
	// Config is written to <datadir>/node.conf before the first start and
	// passed as the first argument (redis-sentinel needs a writable config file).
	Config string
	// Password, when set, is the node's requirepass (redis only): the
	// backend's own readiness check authenticates with it.
	Password string
	// ClockShim preloads the clock-offset shim (faults/clock) so the node's
	// realtime clock can be moved through <datadir>/clock-offset.
	ClockShim bool
	// ClusterBus (redis only) runs the node with cluster-enabled and a
	// cluster bus port of its own (process backend), its cluster state in
	// nodes.conf in its directory.
	ClusterBus bool
}

// Node is one running (or stopped) server.
type Node interface {
	Spec() NodeSpec
	// Addr is host:port where the node serves, reachable from the harness
	// and, unless the node also has a PeerAddr() string method (a remote
	// Docker daemon's nodes), from other nodes. It may change across
	// restarts.
	Addr() string
	// Port is the port the node listens on inside its own network.
	Port() int
	// DataDir is the node's working directory as a path on the harness's
	// host (with a remote Docker daemon: inside the node's containers); it
	// survives Kill and Start.
	DataDir() string
	// Kill sends SIGKILL and waits for the process to be gone.
	Kill(ctx context.Context) error
	// Start (re)starts a killed node with the same data directory.
	Start(ctx context.Context) error
	// Signal delivers a signal (SIGSTOP, SIGCONT, SIGTERM) to the server process.
	Signal(ctx context.Context, sig syscall.Signal) error
	// Running reports whether the process is alive.
	Running() bool
}

// Backend runs nodes.
type Backend interface {
	Name() string
	// Start creates and starts a node.
	Start(ctx context.Context, spec NodeSpec) (Node, error)
	// ProxyHost is the address the harness's toxiproxy proxies listen on:
	// one that both the harness and the nodes can reach, or only the
	// harness when the backend runs a toxiproxy server of its own for the
	// proxies between nodes (see NetFor).
	ProxyHost() string
	// Supports is nil when the backend can inject fault (a name of package
	// faults' registry) on its nodes, else says why not: the runner asks
	// before it starts any node.
	Supports(fault string) error
	// Close kills and removes every node this backend started, with its
	// data directory, and any network it created.
	Close(ctx context.Context) error
}

// Docker backend labels: every container, network and volume carries them.
const (
	LabelApp   = "lockfault"
	LabelRun   = "lockfault.run"
	LabelOwner = "lockfault.owner" // pid of the harness that made it: `clean` spares live runs
	LabelHost  = "lockfault.host"  // host name of that harness: `clean` spares other hosts' runs
)
