package suite

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/lockimpl"
)

func TestSelectPropertiesOnlySkipAndClaims(t *testing.T) {
	all := Names()
	if len(all) < 2 {
		t.Skipf("the suite has %d properties; selection needs two", len(all))
	}
	info := lockimpl.Info{Name: "x", Needs: lockimpl.NeedsSingle}
	apply, nc, err := Select(info, nil, nil)
	if err != nil || len(apply)+len(nc) != len(all) {
		t.Fatalf("no filter: %d run + %d not claimed of %d (%v)", len(apply), len(nc), len(all), err)
	}
	// A prefix selects the group, a full name one property.
	first := all[0]
	group := strings.SplitN(first, "/", 2)[0]
	apply, nc, _ = Select(info, []string{group}, nil)
	for _, p := range apply {
		if !strings.HasPrefix(p.Name, group+"/") {
			t.Errorf("-only %s ran %s", group, p.Name)
		}
	}
	for n := range nc {
		if !strings.HasPrefix(n, group+"/") {
			t.Errorf("-only %s listed %s", group, n)
		}
	}
	apply, nc, _ = Select(info, nil, []string{first})
	for _, p := range apply {
		if p.Name == first {
			t.Errorf("-skip %s still ran it", first)
		}
	}
	if _, ok := nc[first]; ok {
		t.Errorf("-skip %s still listed it", first)
	}
	// "exclusion" must not select "exclusionary/..." (whole words only).
	if _, _, err := Select(info, []string{group[:len(group)-1]}, nil); err == nil {
		t.Errorf("-only %q (a cut word) matched something", group[:len(group)-1])
	}
	if _, _, err := Select(info, nil, []string{"no/such"}); err == nil || !strings.Contains(err.Error(), `no property matches "no/such"`) {
		t.Errorf("unknown -skip: %v", err)
	}
	// A capability the lock does not claim is not claimed, with the reason.
	for _, p := range All() {
		if p.Requires == "" || (len(p.Needs) > 0 && !slices.Contains(p.Needs, info.Needs)) {
			continue // (a property for another kind of lock says so instead)
		}
		_, nc, _ := Select(info, []string{p.Name}, nil)
		if why := nc[p.Name]; !strings.Contains(why, p.Requires) {
			t.Errorf("%s requires %s: reason %q", p.Name, p.Requires, why)
		}
	}
}
