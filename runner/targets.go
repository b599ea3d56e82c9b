package runner

import (
	"fmt"
	"strings"

	"github.com/lockfault/lockfault/faults"
	"github.com/lockfault/lockfault/scenarios"
)

// checkTarget validates a fault step's target against the topology and the
// workload before anything starts.
func checkTarget(sc *scenarios.Scenario, fault, target string) error {
	_, info, err := faults.Get(fault)
	if err != nil {
		return err
	}
	var allowed []string
	switch info.Targets {
	case "none":
		if target != "" {
			return fmt.Errorf("fault %s takes no target", fault)
		}
		return nil
	case "client":
		for i := 1; i <= sc.Workload.Clients; i++ {
			allowed = append(allowed, fmt.Sprintf("c%d", i))
		}
		allowed = append(allowed, "holder", "others", "all")
	default:
		allowed = nodeTargets(sc.Topology)
	}
	for _, a := range allowed {
		if a == target {
			return nil
		}
	}
	if target == "" {
		return fmt.Errorf("fault %s needs a target (allowed: %s)", fault, strings.Join(allowed, ", "))
	}
	return fmt.Errorf("target %q is not allowed for %s in a %s topology (allowed: %s)", target, fault, sc.Topology.Kind, strings.Join(allowed, ", "))
}

func nodeTargets(t scenarios.Topology) []string {
	names := func(prefix string, n int) []string {
		var out []string
		for i := 1; i <= n; i++ {
			out = append(out, fmt.Sprintf("%s%d", prefix, i))
		}
		return out
	}
	switch t.Kind {
	case "standalone":
		return []string{"primary", "all", "n1"}
	case "replicated":
		out := append([]string{"primary", "replica", "replicas", "all"}, names("n", 1+t.Replicas)...)
		if t.Sentinels > 0 {
			out = append(out, "sentinels")
			out = append(out, names("s", t.Sentinels)...)
		}
		return out
	case "masters":
		return append([]string{"master", "masters", "minority", "majority", "all"}, names("n", t.Masters)...)
	case "etcd":
		return []string{"etcd", "all", "e1"}
	}
	return nil
}
