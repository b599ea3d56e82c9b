package cluster

import (
	"net"
	"os"
	"testing"
)

func TestOwnsListener(t *testing.T) {
	l, port := listenLoopback(t)
	if ok, err := ownsListener(os.Getpid(), port); err != nil || !ok {
		t.Fatalf("this process's listener on %d: owns=%v err=%v, want true", port, ok, err)
	}
	free, err := FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := ownsListener(os.Getpid(), free); err != nil || ok {
		t.Fatalf("a port nobody listens on: owns=%v err=%v, want false", ok, err)
	}
	// A connected (not listening) socket on the port is not a listener.
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l.Close()
	if ok, err := ownsListener(os.Getpid(), port); err != nil || ok {
		t.Fatalf("after the listener closed: owns=%v err=%v, want false", ok, err)
	}
}
