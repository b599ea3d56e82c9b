package runner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
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
	if err := faults.Reaches(fault, sc.Topology.Kind); err != nil {
		return err
	}
	var allowed []string
	switch info.Targets {
	case faults.TargetsNone:
		if target != "" {
			return fmt.Errorf("fault %s takes no target", fault)
		}
		return nil
	case faults.TargetsClient:
		allowed = append(clientNames(sc), lockfault.TargetHolder, lockfault.TargetOthers, lockfault.TargetAll)
		if hasCommandAwait(sc) {
			allowed = append(allowed, lockfault.TargetTrigger)
		}
	default:
		allowed = cluster.NodeTargets(clusterTopology(sc))
	}
	if slices.Contains(allowed, target) {
		return nil
	}
	if target == "" {
		return fmt.Errorf("fault %s needs a target (allowed: %s)", fault, strings.Join(allowed, ", "))
	}
	return fmt.Errorf("target %q is not allowed for %s in a %s topology (allowed: %s)", target, fault, sc.Topology.Kind, strings.Join(allowed, ", "))
}

// clientNames lists the workload's clients: c1 .. cN.
func clientNames(sc *scenarios.Scenario) []string {
	out := make([]string, sc.Workload.Clients)
	for i := range out {
		out[i] = fmt.Sprintf("c%d", i+1)
	}
	return out
}

// clusterTopology is the scenario's topology as the cluster starts it.
func clusterTopology(sc *scenarios.Scenario) cluster.Topology {
	t := sc.Topology
	return cluster.Topology{Kind: t.Kind, Replicas: t.Replicas, Sentinels: t.Sentinels, Masters: t.Masters,
		Persistence: t.Persistence, Password: t.Password, NodeTimeout: t.NodeTimeout.D()}
}

// hasCommandAwait: a step waits for a command (await: command), so the
// steps after it may target the client whose command fired.
func hasCommandAwait(sc *scenarios.Scenario) bool {
	return slices.ContainsFunc(sc.Nemesis.Steps, func(st scenarios.Step) bool { return st.Await == awaitCommand })
}

// Programs lists the servers a run of sc starts.
func Programs(sc *scenarios.Scenario) []string { return clusterTopology(sc).Programs() }

// Packages lists the Debian packages a run of sc needs on this machine: its
// topology's servers, and the interpreter of workerLine when lockfault knows
// the package that provides it.
func Packages(sc *scenarios.Scenario, workerLine string) []string {
	programs := clusterTopology(sc).Programs()
	if argv, err := SplitCommand(workerLine); err == nil && len(argv) > 0 {
		programs = append(programs, argv[0])
	}
	return cluster.Packages(programs...)
}
