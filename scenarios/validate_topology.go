package scenarios

import (
	"strings"

	"github.com/lockfault/lockfault"
)

// validateTopology checks the nodes: a known kind, the sizes that apply to
// it, the persistence mode and the password.
func (s *Scenario) validateTopology() error {
	t := &s.Topology
	kinds := "standalone, replicated, masters, etcd, cluster"
	notHere := func(field string) error {
		return s.ErrAt("topology."+field, "does not apply to a %s topology (allowed for %s: %s)", t.Kind, t.Kind, strings.Join(topologyFields(t.Kind), ", "))
	}
	switch t.Kind {
	case "standalone", "etcd":
	case "replicated":
		if t.Replicas < 1 || t.Replicas > MaxReplicas {
			return s.ErrAt("topology.replicas", "want 1 to %d replicas, got %d", MaxReplicas, t.Replicas)
		}
		if t.Sentinels != 0 && (t.Sentinels < 3 || t.Sentinels%2 == 0 || t.Sentinels > MaxSentinels) {
			return s.ErrAt("topology.sentinels", "want 0 or 3 (an odd number from 3 to %d), got %d", MaxSentinels, t.Sentinels)
		}
	case "masters":
		if t.Masters < 1 || t.Masters > MaxMasters {
			return s.ErrAt("topology.masters", "want 1 to %d independent masters, got %d", MaxMasters, t.Masters)
		}
	case "cluster":
		if t.Masters < MinClusterMasters || t.Masters > MaxMasters {
			return s.ErrAt("topology.masters", "want %d to %d cluster masters, got %d (allowed: %d to %d)", MinClusterMasters, MaxMasters, t.Masters, MinClusterMasters, MaxMasters)
		}
		if t.Replicas < 0 || t.Replicas > MaxClusterReplicas {
			return s.ErrAt("topology.replicas", "want 0 to %d replicas per master, got %d (allowed: 0 to %d)", MaxClusterReplicas, t.Replicas, MaxClusterReplicas)
		}
		if d := t.NodeTimeout.D(); d != 0 && (d < MinNodeTimeout || d > MaxNodeTimeout) {
			return s.ErrAt("topology.node_timeout", "%v is out of range (allowed: %v to %v; default 2s)", d, MinNodeTimeout, MaxNodeTimeout)
		}
	case "":
		return s.ErrAt("topology.kind", "missing (allowed: %s)", kinds)
	default:
		if err := s.checkText("topology.kind", string(t.Kind), MaxNameLen); err != nil {
			return err
		}
		return s.ErrAt("topology.kind", "%q is not allowed (allowed: %s)", t.Kind, kinds)
	}
	if t.Kind != "replicated" && t.Kind != "cluster" && t.Replicas != 0 {
		return notHere("replicas")
	}
	if t.Kind != "replicated" && t.Sentinels != 0 {
		return notHere("sentinels")
	}
	if t.Kind != "masters" && t.Kind != "cluster" && t.Masters != 0 {
		return notHere("masters")
	}
	if t.Kind != "cluster" && t.NodeTimeout != 0 {
		return notHere("node_timeout")
	}
	if t.Kind == "etcd" && t.Persistence != "" {
		return notHere("persistence")
	}
	if t.Kind == "etcd" && t.Password != "" {
		return s.ErrAt("topology.password", "etcd nodes run without a password here (allowed for etcd: %s)", strings.Join(topologyFields(t.Kind), ", "))
	}
	switch t.Persistence {
	case "", "none", "aof-always", "aof-everysec":
	default:
		if err := s.checkText("topology.persistence", t.Persistence, MaxNameLen); err != nil {
			return err
		}
		return s.ErrAt("topology.persistence", "%q is not allowed (allowed: none, aof-always, aof-everysec)", t.Persistence)
	}
	if len(t.Password) > MaxPasswordLen {
		return s.ErrAt("topology.password", "%d characters (allowed: 1 to %d)", len(t.Password), MaxPasswordLen)
	}
	for _, c := range t.Password {
		if c <= ' ' || c == '"' || c == '\'' || c == '\\' || c > '~' {
			return s.ErrAt("topology.password", "contains white space, a quote, a backslash or a non-ASCII character (allowed: printable ASCII without those)")
		}
	}
	return nil
}

// topologyFields lists the topology fields that apply to a kind.
func topologyFields(kind lockfault.TopologyKind) []string {
	switch kind {
	case "replicated":
		return []string{"kind", "replicas", "sentinels", "persistence", "password"}
	case "masters":
		return []string{"kind", "masters", "persistence", "password"}
	case "cluster":
		return []string{"kind", "masters", "replicas", "node_timeout", "persistence", "password"}
	case "etcd":
		return []string{"kind"}
	}
	return []string{"kind", "persistence", "password"}
}
