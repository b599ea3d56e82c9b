package cluster

import (
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// The bytes a client sends through a proxy and reads back are counted on
// the proxy's side of its connection (tcp_info, by sock_diag), per
// connection, and grow with what crosses it.
func TestLinkBytesCountsWhatCrosses(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }() // echo
		}
	}()
	n, err := NewNet("127.0.0.1", "lbtest"+time.Now().Format("150405.000000"))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	px, err := n.Proxy("c1>n1", up.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	read := func() (ConnBytes, int) {
		t.Helper()
		m, err := n.LinkBytes([]string{"c1>n1"})
		if err != nil {
			t.Fatal(err)
		}
		var sum ConnBytes
		for _, b := range m["c1>n1"] {
			sum.FromClient += b.FromClient
			sum.ToClient += b.ToClient
		}
		return sum, len(m["c1>n1"])
	}
	if b, k := read(); k != 0 || b != (ConnBytes{}) {
		t.Fatalf("before any connection: %+v on %d connections", b, k)
	}
	c, err := net.Dial("tcp", px.Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := make([]byte, 1000)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, msg); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		b, k := read()
		if k == 1 && b.FromClient == 1000 && b.ToClient == 1000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 1000 bytes each way: %+v on %d connections", b, k)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Both ways of counting a proxy's open connections agree: sock_diag and
// the /proc socket table.
func TestDiagAndProcTableAgree(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, s)
	}
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	ports := map[uint16][]string{port: {"x"}}
	diag := map[uint16]int{}
	if err := diagEstablished(ports, diag); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	table := map[uint16]int{}
	establishedOn(string(b), ports, table)
	if diag[port] != 3 || table[port] != 3 {
		t.Errorf("3 connections accepted on port %d: sock_diag counts %d, the table %d", port, diag[port], table[port])
	}
}
