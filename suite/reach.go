package suite

import (
	"fmt"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/faults"
	"github.com/lockfault/lockfault/lockimpl"
)

// unreachable says why a property cannot be exercised on a lock at all: a
// fault step of its scenario, fitted to the lock's topology (LoadFor),
// cannot act there (a node clock fault on an etcd node: faults.Reaches).
// The runner would refuse the scenario before anything starts; the card
// says "not exercised" with the reason instead of a harness error. Empty
// when every step can act.
func (p Property) unreachable(info lockimpl.Info) string {
	sc, err := p.LoadFor(lockimpl.Info{Needs: info.Needs, Caps: info.Caps, Failpoints: info.Failpoints})
	if err != nil {
		return ""
	}
	kind := sc.Topology.Kind
	for _, st := range sc.Nemesis.Steps {
		if st.Fault == "" {
			continue
		}
		if err := faults.Reaches(st.Fault, kind); err != nil {
			return fmt.Sprintf("not exercised on %s: %v", kindNoun(kind), err)
		}
	}
	return ""
}

// kindNoun names the nodes of a topology kind for a card row.
func kindNoun(k lockfault.TopologyKind) string {
	if k == lockfault.Etcd {
		return "an etcd node"
	}
	return "a " + string(k) + " topology"
}
