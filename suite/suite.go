// Package suite is the property suite: every promise a lock can make, each
// attacked by one scenario under the faults that break it. A property says
// which locks it applies to (what the lock needs: single master, replicated
// with failover, independent masters, etcd) and which capability it tests
// (extend, fencing, ...); For picks the properties a lock claims. Adding a
// property is one YAML file in this folder plus one line in properties.go.
package suite

import (
	"context"
	"embed"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/scenarios"
)

//go:embed *.yaml
var files embed.FS

// Property is one promise and the experiment that attacks it.
type Property struct {
	// Name is stable (a baseline and `go test -run` name it): lower-case
	// words and slashes, e.g. "exclusion/no-faults".
	Name string
	// Explanation: the promise in one sentence, shown on the card.
	Explanation string
	// Needs lists the lock kinds (lockimpl.Info.Needs: single, masters,
	// etcd) the property applies to; empty means every kind.
	Needs []lockfault.Needs
	// Requires is the capability the property tests (lockimpl.Cap*), or
	// several joined by "+" that the lock must all claim; "" for plain
	// mutual exclusion, which every lock claims.
	Requires string
	// Scenario is the YAML file in this folder, without ".yaml".
	Scenario string
	// Failpoint, when set, is a failpoint of the lock's own code that the
	// scenario arms (lockimpl.Info.Failpoints): the property attacks a step
	// inside the lock. A lock that does not declare it is attacked at the
	// same step through its Redis commands instead: the scenario's variant
	// by-command (VariantByCommand), which fires on the command the lock
	// sends there; an etcd lock (gRPC, not tapped) does not claim it.
	Failpoint string
	// Broken and Correct name the property's mutation pair: a lock broken
	// in exactly the way the property targets, which must violate it, and
	// a correct lock of the same kind, which must hold it (both registered
	// by the suite's tests, suite/broken_test.go and watchdog_test.go, or
	// built in). TestMutations runs both for every property: a property
	// that cannot fail is a defect.
	Broken, Correct string
	// Options are lock options the property sets for a lock that
	// understands them (lockimpl.Info.Options), e.g. to turn a watchdog on;
	// a lock that does not declare an option runs without it.
	Options map[string]string
	// Cluster is the mutation pair of a property written for one master
	// (Needs empty or single) that runs on a Redis Cluster too, for the
	// locks that need one: its scenario runs on the cluster topology (or
	// as its variant "cluster", VariantCluster), the faults that named the
	// node acting on every node or on the key's master (key-master,
	// key-replica). Broken and Correct are locks that need a cluster
	// (suite/cluster_twins_test.go); TestMutations runs both. Nil: the
	// property does not run on a cluster, and NotOnCluster says why.
	Cluster *Pair
	// NotOnCluster says why a property written for another topology is
	// not claimed by a lock on a cluster (Cluster nil).
	NotOnCluster string
}

// Pair is a mutation pair: a lock broken in exactly the way a property
// targets, which must violate it, and a correct lock, which must hold it.
type Pair struct{ Broken, Correct string }

// VariantCluster names the variant of a property's scenario that runs it on
// a Redis Cluster, when the base's topology (replicated, for a failover)
// has no plain counterpart there.
const VariantCluster = "cluster"

var registry []Property

func register(p Property) {
	for _, q := range registry {
		if q.Name == p.Name {
			panic("suite: duplicate property " + p.Name)
		}
	}
	registry = append(registry, p)
}

// All lists every property, sorted by name.
func All() []Property {
	out := append([]Property(nil), registry...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup finds a property by name.
func Lookup(name string) (Property, bool) {
	for _, p := range registry {
		if p.Name == name {
			return p, true
		}
	}
	return Property{}, false
}

// VariantByCommand names the variant of a failpoint property's scenario
// that attacks the same step through the Redis command the lock sends
// there (a command-level trigger), for a lock that declares no failpoint.
const VariantByCommand = "by-command"

// ByCommand reports whether the property attacks a step inside this lock
// through its Redis commands: it names a failpoint the lock does not
// declare (a lock that declares one keeps it).
func (p Property) ByCommand(info lockimpl.Info) bool {
	return p.Failpoint != "" && !slices.Contains(info.Failpoints, p.Failpoint)
}

// Requirement says what a lock must claim for the property to apply: its
// capabilities and the failpoint it arms, or "-".
func (p Property) Requirement() string {
	var parts []string
	if p.Requires != "" {
		parts = append(parts, p.Requires)
	}
	if p.Failpoint != "" {
		parts = append(parts, "failpoint "+p.Failpoint)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// Applies reports whether a property applies to a lock: every fault of its
// schedule can act on the lock's topology (else it is not exercised there,
// with the reason), the lock's kind is one the property needs, and it
// claims the capability tested.
func (p Property) Applies(info lockimpl.Info) (ok bool, why string) {
	if why := p.unreachable(info); why != "" {
		return false, why
	}
	// A property written for another topology runs on a cluster only once
	// its mutation pair has been proven there (p.Cluster); that is decided
	// after the capabilities, so that a lock that does not claim what the
	// property tests is told so first.
	onCluster := info.Needs == lockfault.NeedsCluster && !slices.Contains(p.Needs, lockfault.NeedsCluster)
	if !onCluster && len(p.Needs) > 0 && !slices.Contains(p.Needs, info.Needs) {
		return false, fmt.Sprintf("needs a %v lock, %s is %s", p.Needs, info.Name, info.Needs)
	}
	if p.Requires != "" {
		for _, c := range strings.Split(p.Requires, "+") {
			if !info.Has(c) {
				why := fmt.Sprintf("%s does not claim %s", info.Name, c)
				if c != p.Requires {
					why += fmt.Sprintf(" (the property needs %s)", p.Requires)
				}
				return false, why
			}
		}
	}
	if onCluster && p.Cluster == nil {
		why := p.NotOnCluster
		if why == "" {
			why = "written for another topology, and not proven on a cluster"
		}
		return false, "not on a cluster: " + why
	}
	if p.Failpoint != "" && !slices.Contains(info.Failpoints, p.Failpoint) && info.Needs == lockfault.NeedsEtcd {
		return false, fmt.Sprintf("%s has no failpoint %s, and etcd's gRPC traffic is not tapped: the step cannot be attacked by its command either", info.Name, p.Failpoint)
	}
	return true, ""
}

// For splits the suite for one lock: the properties it is attacked on, and
// those it does not claim (with the reason).
func For(info lockimpl.Info) (apply []Property, notClaimed map[string]string) {
	notClaimed = map[string]string{}
	for _, p := range All() {
		if ok, why := p.Applies(info); ok {
			apply = append(apply, p)
		} else {
			notClaimed[p.Name] = why
		}
	}
	return apply, notClaimed
}

// Load parses the property's scenario, as scenarios.Parse does for a file.
func (p Property) Load() (*scenarios.Scenario, error) {
	data, err := files.ReadFile(p.Scenario + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("property %s: no scenario %s.yaml", p.Name, p.Scenario)
	}
	return scenarios.Parse(path.Join("suite", p.Scenario+".yaml"), data)
}

// Prepare fits the property's scenario to subj (LoadFor) and prepares its
// run with runner.Prepare, the one place that decides the lock, giving it
// the lock options the property turns on (ov.LockOptions).
func (p Property) Prepare(ctx context.Context, subj runner.Subject, ov runner.Overrides) (*runner.Plan, error) {
	sc, err := p.LoadFor(subj.Info)
	if err != nil {
		return nil, err
	}
	ov.LockOptions = p.Options
	return runner.Prepare(ctx, sc, &subj, ov)
}

// LoadFor parses the property's scenario and fits it to one lock: the
// scenarios are written for a single-master lock on a standalone node; a lock
// that needs independent masters runs them on 3 masters, an etcd lock on an
// etcd node (steps target clients, or nodes by role or "all", so they fit
// every topology), a lock on a Redis Cluster on 3 masters with a replica
// each (or the scenario's variant "cluster", for a property whose base
// topology has no plain counterpart there). A property written for another
// topology (replicated, for failover) keeps it. The scenario's lock is left
// as written: a default that runner.Prepare, the one place that decides the
// lock, replaces with the subject; the property's Options reach the run
// through Prepare too (runner.Overrides.LockOptions).
func (p Property) LoadFor(info lockimpl.Info) (*scenarios.Scenario, error) {
	sc, err := p.Load()
	if err != nil {
		return nil, err
	}
	if p.ByCommand(info) {
		if sc, err = sc.WithVariant(VariantByCommand); err != nil {
			return nil, err
		}
	}
	if info.Needs == lockfault.NeedsCluster && slices.Contains(sc.VariantNames(), VariantCluster) {
		if sc.Variant != "" {
			return nil, fmt.Errorf("property %s: %s has variants %s and %s, and the two cannot be combined", p.Name, info.Name, sc.Variant, VariantCluster)
		}
		if sc, err = sc.WithVariant(VariantCluster); err != nil {
			return nil, err
		}
	}
	if sc.Topology.Kind == lockfault.Standalone {
		switch info.Needs {
		case lockfault.NeedsMasters:
			sc.Topology.Kind, sc.Topology.Masters = lockfault.Masters, 3
		case lockfault.NeedsEtcd:
			sc.Topology.Kind = lockfault.Etcd
		case lockfault.NeedsCluster:
			sc.Topology.Kind, sc.Topology.Masters, sc.Topology.Replicas = lockfault.Cluster, 3, 1
		}
	}
	return sc, nil
}
