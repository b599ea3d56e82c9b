package suite

import (
	"strings"
	"testing"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/lockimpl"
)

// A property whose schedule steps or drifts a node's clock is not
// exercised on an etcd lock, with the reason (the node clock shim cannot
// move etcd), rather than refused as a harness error or called not
// claimed for the lock's kind; on a single-master lock it applies, and an
// etcd lock is still attacked by the properties without node clock faults.
func TestNodeClockPropertiesNotExercisedOnEtcd(t *testing.T) {
	etcd := lockimpl.Info{Name: "etcd-like", Needs: lockfault.NeedsEtcd}
	single := lockimpl.Info{Name: "single-like", Needs: lockfault.NeedsSingle}
	for _, name := range []string{"clock/node-jump", "clock/node-drift"} {
		p, ok := Lookup(name)
		if !ok {
			t.Fatalf("no property %s", name)
		}
		ok, why := p.Applies(etcd)
		if ok || !strings.HasPrefix(why, "not exercised on an etcd node: ") || !strings.Contains(why, "vDSO") {
			t.Errorf("%s on an etcd lock: applies %v, %q; want not exercised, naming the vDSO", name, ok, why)
		}
		if ok, why := p.Applies(single); !ok {
			t.Errorf("%s on a single-master lock: %q, want it to apply", name, why)
		}
	}
	p, _ := Lookup("validity/slow-acquire")
	if ok, why := p.Applies(etcd); !ok {
		t.Errorf("validity/slow-acquire on an etcd lock: %q, want it to apply", why)
	}
}
