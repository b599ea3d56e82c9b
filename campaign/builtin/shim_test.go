package builtin

import (
	"context"
	"slices"
	"testing"

	"github.com/lockfault/lockfault/campaign"
)

// TestClockShimItems: the items whose runs start nodes with the clock shim
// are the clock properties the lock claims, the scenarios that jump a clock
// and the hunt seeds that may draw such a fault; a property the lock does
// not claim (no run) and faults without the shim are not listed.
func TestClockShimItems(t *testing.T) {
	d, err := campaign.FromValues(campaign.Values{Locks: []string{"single"}, Properties: []string{"clock", "exclusion", "crash"},
		Scenarios: []string{"redlock-clock-jump", "single-crash"}, Hunt: []string{"1"}, Repetitions: 1}, Registry())
	if err != nil {
		t.Fatal(err)
	}
	got := ClockShimItems(context.Background(), d)
	for _, want := range []string{"property:clock/node-jump", "property:clock/node-drift", "scenario:redlock-clock-jump", "hunt:1"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s is not listed: %v", want, got)
		}
	}
	for _, not := range []string{"property:clock/masters-jump", "property:exclusion/no-faults", "scenario:single-crash"} {
		if slices.Contains(got, not) {
			t.Errorf("%s is listed: %v", not, got)
		}
	}
	if n := NeedsOf(context.Background(), d); !slices.Equal(n.Programs, []string{"redis-server"}) {
		t.Errorf("programs %v, want redis-server alone (no item of single runs Sentinels)", n.Programs)
	}
}
