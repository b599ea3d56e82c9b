package runner

import (
	"testing"
	"time"

	"github.com/lockfault/lockfault/history"
)

// start_apart: cN's first acquire is invoked at least (N-1) × start_apart
// after c1's (without it the clients start together, within milliseconds).
func TestStartApartDelaysEachClientsFirstRound(t *testing.T) {
	for _, apart := range []time.Duration{300 * time.Millisecond} {
		src := `name: start-apart
topology: {kind: standalone}
lock: {name: single, ttl: 2s, wait: 2s}
workload: {clients: 3, hold: 10ms, start_apart: ` + apart.String() + `}
nemesis:
  cycles: 1
  steps: [{sleep: 1s}]
expect: [safe]
`
		_, evs := runInline(t, "start-apart", src)
		first := map[string]int64{}
		for _, e := range evs {
			if e.Kind == history.Invoke && e.Op == history.OpAcquire && first[e.Process] == 0 {
				first[e.Process] = e.Time
			}
		}
		if len(first) != 3 {
			t.Fatalf("start_apart %v: first acquires of %v, want c1, c2 and c3", apart, first)
		}
		for i, c := range []string{"c2", "c3"} {
			gap := time.Duration(first[c] - first["c1"])
			want := time.Duration(i+1) * apart
			if gap < want {
				t.Errorf("start_apart %v: %s's first acquire came %v after c1's, want at least %v", apart, c, gap, want)
			}
		}
	}
}
