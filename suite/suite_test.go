package suite

import (
	"testing"

	"github.com/lockfault/lockfault/lockimpl"
)

func TestEveryPropertyLoads(t *testing.T) {
	if len(All()) == 0 {
		t.Fatal("no properties registered")
	}
	for _, p := range All() {
		if _, err := p.Load(); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
}

func TestForSplitsByCapability(t *testing.T) {
	apply, not := For(lockimpl.Info{Name: "x", Needs: "single"})
	if len(apply) == 0 {
		t.Fatal("a single-master lock gets no property")
	}
	for _, p := range apply {
		if p.Requires != "" {
			t.Errorf("%s requires %s but was applied to a lock that claims nothing", p.Name, p.Requires)
		}
	}
	_ = not
}
