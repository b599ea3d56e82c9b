package runner

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/scenarios"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// An await after an await waits for the next event after the first one's:
// one grant never satisfies both.
func TestChainedAwaitsTakeSuccessiveEvents(t *testing.T) {
	var r events
	first := r.await("grant", "", nil)
	second := r.await("grant", "", first)
	byC2 := r.await("read", "c2", first)
	r.signal("grant", "c1")
	if !closed(first) || closed(second) {
		t.Fatalf("after one grant: first %v, second %v; want true, false", closed(first), closed(second))
	}
	r.signal("read", "c1")
	if closed(byC2) {
		t.Fatal("a read by c1 woke an await by c2")
	}
	r.signal("grant", "c3")
	if !closed(second) {
		t.Fatal("the second grant did not wake the second await")
	}
	r.signal("read", "c2")
	if !closed(byC2) {
		t.Fatal("c2's read after the first grant did not wake its await")
	}
	// Without a predecessor, the same event wakes every await of its kind.
	a, b := r.await("write", "", nil), r.await("write", "", nil)
	r.signal("write", "c1")
	if !closed(a) || !closed(b) {
		t.Fatal("one write must wake both unchained awaits")
	}
}

// quiesce: cut ends a 60 s critical section at the quiesce and releases a
// grant that arrives while the gate is closed without a section; the drain
// at the end cuts too. Without the cut this run would last minutes.
func TestQuiesceCutEndsHolds(t *testing.T) {
	src := `name: cut-test
topology: {kind: standalone}
lock: {name: single, ttl: 120s, wait: 120s}
workload: {clients: 2, hold: 60s, quiesce: cut}
nemesis:
  cycles: 2
  steps:
    - quiesce
    - resume
    - {await: read}
expect: [safe]
`
	sc, err := scenarios.Parse("cut-test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{Backend: "process", ReportsDir: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	out, err := Run(ctx, plan(t, sc, nil, Overrides{}), opt)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Meta.Matched {
		t.Fatalf("verdict %s: %s", out.Result.Verdict, out.Meta.Why)
	}
	evs, err := history.Read(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	invoked := map[int64]int64{}
	sections, bare := 0, 0
	grantOf := map[string]bool{} // lease -> granted
	csOf := map[string]bool{}    // lease -> had a section
	for _, e := range evs {
		switch {
		case e.Kind == history.Invoke:
			invoked[e.OpID] = e.Time
			if e.Op == "cs" {
				csOf[e.Lease] = true
			}
		case e.Kind == history.OK && e.Op == "acquire":
			grantOf[e.Lease] = true
		case e.Kind == history.OK && e.Op == "cs":
			sections++
			if d := time.Duration(e.Time - invoked[e.OpID]); d >= 60*time.Second {
				t.Errorf("section %s lasted %v: not cut", e.Lease, d)
			}
			if e.Wrote == nil {
				t.Errorf("cut section %s wrote nothing", e.Lease)
			}
		}
	}
	for l := range grantOf {
		if !csOf[l] {
			bare++
		}
	}
	if sections < 2 {
		t.Errorf("%d critical sections, want one per cycle at least", sections)
	}
	// The other client was waiting for the lock at each quiesce: granted
	// while the gate was closed (or the workload stopping), it released
	// without a section.
	if bare == 0 {
		t.Error("no grant was released without a section")
	}
	t.Logf("%d sections, %d grants released at once, run %v", sections, bare, out.Meta.Duration)
}
