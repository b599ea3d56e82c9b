package runner

import (
	"bufio"
	"net"
	"sync"
	"testing"
	"time"
)

// A tap's Close waits for its connections, and a message on a connection
// asks the taps' opOf (under the taps' lock) for its operation. close must
// not hold that lock while it closes the taps: it did, and an interrupted
// hunt's run never ended (its cluster's nodes were left running). The
// message's question is held until close has started, so the old order
// deadlocks here every time.
func TestTapsCloseWhileAMessageAsksItsOperation(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() { // the node: answers each line it reads with +PONG
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if line[0] == '*' {
						continue
					}
					if line[0] != '$' {
						c.Write([]byte("+PONG\r\n"))
					}
				}
			}()
		}
	}()

	tp := newTaps()
	asked, goOn := make(chan struct{}), make(chan struct{})
	var once sync.Once
	tp.reg.SetOpSource(func(client string) string {
		once.Do(func() { close(asked); <-goOn })
		return tp.opOf(client)
	})
	addr, err := tp.addr("c1", "n1", up.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the tap never asked for the PING's operation")
	}
	done := make(chan struct{})
	go func() { tp.close(); close(done) }()
	// Let close reach the taps' Close before the message asks opOf. (If it
	// has not yet, this test passes whatever the order: it cannot fail a
	// correct close.)
	time.Sleep(300 * time.Millisecond)
	close(goOn)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("taps.close never returned: it holds the taps' lock while a tap waits for a connection that asks opOf under it")
	}
}
