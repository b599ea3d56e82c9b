package builtin

import (
	"context"
	"slices"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/campaign"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/hunt"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/scenarios"
	"github.com/lockfault/lockfault/suite"
)

// Needs is what a campaign's runs need on the machine that runs them,
// found before any run starts.
type Needs struct {
	// ShimItems are the keys of the items whose runs start their nodes
	// with the clock shim (runner.ShimFaults) for some subject: a property
	// the subject claims or a scenario whose schedule uses one of those
	// faults, a hunt seed whose subject may draw one (its known limits do
	// not exclude it).
	ShimItems []string
	// Programs are the servers the items' topologies run and the workers'
	// interpreters lockfault knows a package of (cluster.DebianPackage),
	// each once.
	Programs []string
}

// ClockShimItems is NeedsOf(ctx, d).ShimItems.
func ClockShimItems(ctx context.Context, d *campaign.Definition) []string {
	return NeedsOf(ctx, d).ShimItems
}

// NeedsOf finds what d's runs need, so that a campaign refuses up front
// (a missing clock shim, a missing server) instead of failing each run when
// its nodes start. A subject that cannot be resolved (a worker that does not
// start) counts as a single-master lock.
func NeedsOf(ctx context.Context, d *campaign.Definition) Needs {
	type subj struct {
		info  lockimpl.Info
		known []string
	}
	var n Needs
	add := func(programs ...string) {
		for _, p := range programs {
			if !slices.Contains(n.Programs, p) {
				n.Programs = append(n.Programs, p)
			}
		}
	}
	var subjects []subj
	for _, s := range d.Subjects {
		sj := subj{info: lockimpl.Info{Name: s.Lock, Needs: lockfault.NeedsSingle}, known: s.Known}
		if argv, err := runner.SplitCommand(s.Worker); err == nil && len(argv) > 0 && cluster.DebianPackage(argv[0]) != "" {
			add(argv[0])
		}
		if r, err := runner.Resolve(ctx, s.Lock, s.Worker); err == nil {
			sj.info = r.Info
			if r.Shipped || !r.External() {
				sj.known, _ = hunt.ParseKnown(append(hunt.BuiltInLimits(r.Name()), s.Known...))
			}
		}
		subjects = append(subjects, sj)
	}
	for _, it := range d.Items {
		shim := false
		for _, s := range subjects {
			var sc *scenarios.Scenario
			switch it.Kind {
			case campaign.KindProperty:
				p, ok := suite.Lookup(it.Name)
				if !ok {
					continue
				}
				if ok, _ := p.Applies(s.info); !ok {
					continue // not claimed: no run
				}
				sc, _ = p.LoadFor(s.info)
			case campaign.KindScenario:
				name := it.Name
				if it.Path != "" {
					name = it.Path
				}
				sc, _ = runner.Load(name)
			case campaign.KindHunt:
				sp := hunt.NewSpace(s.info, s.known)
				shim = shim || slices.ContainsFunc(sp.Faults, func(f string) bool { return slices.Contains(runner.ShimFaults, f) })
				add(huntPrograms(s.info)...)
			}
			if sc != nil {
				shim = shim || runner.UsesClockShim(sc)
				add(runner.Programs(sc)...)
			}
		}
		if shim {
			n.ShimItems = append(n.ShimItems, it.Key())
		}
	}
	return n
}

// huntPrograms are the servers a hunt of the lock runs: etcd for an etcd
// lock, Redis for any other (a hunt's replicated topology has no
// Sentinels).
func huntPrograms(info lockimpl.Info) []string {
	if info.Needs == lockfault.NeedsEtcd {
		return []string{"etcd"}
	}
	return []string{"redis-server"}
}
