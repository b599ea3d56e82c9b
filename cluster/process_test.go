package cluster

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestProcessNodeKillRestartAndClose(t *testing.T) {
	ctx := context.Background()
	p, err := NewProcess("test")
	if err != nil {
		t.Fatal(err)
	}
	n, err := p.Start(ctx, NodeSpec{Name: "n1", Kind: KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer rdb.Close()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if n.Running() {
		t.Fatal("killed node still running")
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// No persistence: the restarted node is empty.
	if v, err := rdb.Exists(ctx, "k").Result(); err != nil || v != 0 {
		t.Fatalf("after restart exists=%d err=%v, want 0 and nil", v, err)
	}
	dir := n.DataDir()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n.Running() {
		t.Fatal("node survived Close")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("data dir %s survived Close: %v", dir, err)
	}
}
