package cluster

import (
	"context"
	"errors"
	"net"
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

// Another process holding one of an etcd node's two ports as it starts
// (the ports are probed free, then released before etcd binds them) moves
// the node to free ones instead of failing the run: etcd logs "bind:
// address already in use" in lower case, which the check once missed
// (rates campaign, 12 runs at once: "node e1 did not come up: process
// exited").
func TestEtcdNodeMovesOffATakenPort(t *testing.T) {
	for _, which := range []string{"client", "peer"} {
		t.Run(which, func(t *testing.T) {
			_, taken := listenLoopback(t)
			free, err := FreePort("127.0.0.1")
			if err != nil {
				t.Fatal(err)
			}
			n := &procNode{spec: NodeSpec{Name: "e1", Kind: KindEtcd}, dir: t.TempDir(), port: free, peerPort: taken}
			if which == "client" {
				n.port, n.peerPort = taken, free
			}
			if err := n.Start(context.Background()); err != nil {
				t.Fatalf("etcd with its %s port taken: %v", which, err)
			}
			defer n.Kill(context.Background())
			if n.port == taken || n.peerPort == taken {
				t.Fatalf("etcd still on the taken port %d (client %d, peer %d)", taken, n.port, n.peerPort)
			}
			if !n.Running() {
				t.Fatal("etcd not running after the move")
			}
		})
	}
}

func TestPortTakenLog(t *testing.T) {
	for log, want := range map[string]bool{
		"# Warning: Could not create server TCP listening socket *:6379: bind: Address already in use": true,
		"etcdmain: listen tcp 127.0.0.1:44265: bind: address already in use":                           true,
		"etcdmain: open /data/etcd: permission denied":                                                 false,
	} {
		if got := portTakenLog([]byte(log)); got != want {
			t.Errorf("portTakenLog(%q) = %v, want %v", log, got, want)
		}
	}
}

// A port that accepts the pid check's connection and then drops it is not
// the node's: checkRedisPid says errPortTaken, so the node moves (rates
// campaign: "INFO server: read: connection reset by peer").
func TestCheckRedisPidTakesADroppedConnectionForAnotherProcess(t *testing.T) {
	for _, how := range []string{"reset", "eof"} {
		t.Run(how, func(t *testing.T) {
			l, _ := listenLoopback(t)
			go func() {
				c, err := l.Accept()
				if err != nil {
					return
				}
				if how == "reset" {
					c.(*net.TCPConn).SetLinger(0)
				}
				c.Close()
			}()
			err := checkRedisPid(context.Background(), l.Addr().String(), "", os.Getpid())
			if !errors.Is(err, errPortTaken) {
				t.Fatalf("checkRedisPid = %v, want errPortTaken", err)
			}
		})
	}
}

// listenLoopback holds a loopback listener for the test and returns its port.
func listenLoopback(t *testing.T) (net.Listener, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, l.Addr().(*net.TCPAddr).Port
}
