package cluster

import (
	"net"
	"strings"
	"testing"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
)

// The log is split anywhere by the pipe: a line in pieces counts once, an
// overlong one and other messages not at all.
func TestAcceptLogCountsAcceptedLines(t *testing.T) {
	a := newAcceptLog()
	line := `{"level":"info","name":"r:c1>n1","listen":"127.0.0.1:1","client":"127.0.0.1:2","message":"Accepted client"}` + "\n"
	other := `{"level":"info","name":"r:c1>n1","message":"Started proxy"}` + "\n"
	fake := `{"level":"warn","name":"r:c1>n1","error":"\"Accepted client\"","message":"Source terminated"}` + "\n"
	long := `{"name":"r:c1>n1","message":"Accepted client","pad":"` + strings.Repeat("x", maxLogLine) + `"}` + "\n"
	all := line + other + line + fake + long + line
	for i := 0; i < len(all); i += 7 { // seven bytes a write
		a.Write([]byte(all[i:min(i+7, len(all))]))
	}
	got, err := a.read([]string{"r:c1>n1", "r:c2>n1"})
	if err != nil {
		t.Fatal(err)
	}
	if got["r:c1>n1"] != 3 || got["r:c2>n1"] != 0 {
		t.Fatalf("counts %v, want r:c1>n1 3 (the overlong line and other messages not counted), r:c2>n1 0", got)
	}
	a.forget("r:")
	if got, _ := a.read([]string{"r:c1>n1"}); got["r:c1>n1"] != 0 {
		t.Fatalf("after forget: %v, want 0", got)
	}
}

// A dial into a link whose every connection is reset at its first byte
// leaves nothing open, and is still counted as accepted.
func TestAcceptedCountsResetDials(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	n, err := NewNet("127.0.0.1", "accepts-"+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	px, err := n.Proxy("c1>n1", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"upstream", "downstream"} {
		if _, err := px.AddToxic("cut-"+s, "reset_peer", s, 1, toxiclient.Attributes{"timeout": 0}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := n.Accepted([]string{"c1>n1"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", px.Listen)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("PING\r\n"))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 8)); err == nil {
			t.Fatal("a read through a cut link answered")
		}
		c.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		now, err := n.Accepted([]string{"c1>n1"})
		if err != nil {
			t.Fatal(err)
		}
		if now["c1>n1"]-before["c1>n1"] == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("accepted %d, want 2 more than %d", now["c1>n1"], before["c1>n1"])
		}
		time.Sleep(10 * time.Millisecond)
	}
	if k, err := n.Conns("c1>n1"); err != nil || k != 0 {
		t.Fatalf("open connections %d (%v), want 0: each was reset", k, err)
	}
}
