package builtin

import (
	"context"
	"slices"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/campaign"
	"github.com/lockfault/lockfault/hunt"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/suite"
)

// ClockShimItems lists the keys of the items of d whose runs start their
// nodes with the clock shim (runner.ShimFaults) for some subject: a
// property the subject claims or a scenario whose schedule uses one of
// those faults, a hunt seed whose subject may draw one (its known limits
// do not exclude it). A
// campaign refuses them up front when the shim is missing, instead of
// failing each such run when its nodes start. A subject that cannot be
// resolved (a worker that does not start) counts as a single-master lock.
func ClockShimItems(ctx context.Context, d *campaign.Definition) []string {
	type subj struct {
		info  lockimpl.Info
		known []string
	}
	var subjects []subj
	for _, s := range d.Subjects {
		sj := subj{info: lockimpl.Info{Name: s.Lock, Needs: lockfault.NeedsSingle}, known: s.Known}
		if r, err := runner.Resolve(ctx, s.Lock, s.Worker); err == nil {
			sj.info = r.Info
			if r.Shipped || !r.External() {
				sj.known, _ = hunt.ParseKnown(append(hunt.BuiltInLimits(r.Name()), s.Known...))
			}
		}
		subjects = append(subjects, sj)
	}
	var out []string
	for _, it := range d.Items {
		needs := slices.ContainsFunc(subjects, func(s subj) bool {
			switch it.Kind {
			case campaign.KindProperty:
				p, ok := suite.Lookup(it.Name)
				if !ok {
					return false
				}
				if ok, _ := p.Applies(s.info); !ok {
					return false // not claimed: no run
				}
				sc, err := p.LoadFor(s.info)
				return err == nil && runner.UsesClockShim(sc)
			case campaign.KindScenario:
				name := it.Name
				if it.Path != "" {
					name = it.Path
				}
				sc, err := runner.Load(name)
				return err == nil && runner.UsesClockShim(sc)
			case campaign.KindHunt:
				sp := hunt.NewSpace(s.info, s.known)
				return slices.ContainsFunc(sp.Faults, func(f string) bool { return slices.Contains(runner.ShimFaults, f) })
			}
			return false
		})
		if needs {
			out = append(out, it.Key())
		}
	}
	return out
}
