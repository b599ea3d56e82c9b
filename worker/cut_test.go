package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/register"
)

// `cut` ends a critical section's hold: a 60 s hold writes and replies as
// soon as the cut arrives. A cut sent while no hold runs does nothing to the
// next one.
func TestCutEndsTheHoldUnderWay(t *testing.T) {
	ctx := context.Background()
	b, err := cluster.NewProcess("worker-cut-test")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	n, err := b.Start(ctx, cluster.NodeSpec{Name: "n1", Kind: cluster.KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	reads := make(chan struct{}, 16)
	res := &register.Server{Record: func(e history.Event) {
		if e.Access == "read" {
			reads <- struct{}{}
		}
	}}
	if err := res.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	send, recv := session(t)
	send(fmt.Sprintf(`{"cmd":"init","client":"c1","lock":"single","endpoints":{"primary":%q},"resource":%q}`, n.Addr(), res.Addr()))
	if m := recv(); m.Type != "ready" {
		t.Fatalf("init: %+v", m)
	}
	send(`{"cmd":"acquire","op":1,"key":"order","lease":"L1","ttl_ms":120000}`)
	if m := recv(); m.Status != StatusOK {
		t.Fatalf("acquire: %+v", m)
	}
	// A cut with nothing under way is forgotten: this hold runs its 300 ms.
	send(`{"cmd":"cut"}`)
	start := time.Now()
	send(`{"cmd":"cs","op":2,"lease":"L1","hold_ms":300}`)
	if m := recv(); m.Status != StatusOK || *m.Wrote != 1 {
		t.Fatalf("cs: %+v", m)
	}
	<-reads
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("a cut sent before the hold ended it: cs took %v", d)
	}
	// The hold of 60 s ends when cut (recv gives up after 10 s).
	send(`{"cmd":"cs","op":3,"lease":"L1","hold_ms":60000}`)
	select {
	case <-reads: // the section has read: it is in its hold
	case <-time.After(10 * time.Second):
		t.Fatal("the second section never read")
	}
	send(`{"cmd":"cut"}`) // the section has read: its cut is armed
	if m := recv(); m.Op != 3 || m.Status != StatusOK || *m.Read != 1 || *m.Wrote != 2 {
		t.Fatalf("cut cs: %+v", m)
	}
	if res.ValueOf("order") != 2 {
		t.Fatalf("resource value %d after the cut section, want 2", res.ValueOf("order"))
	}
}
