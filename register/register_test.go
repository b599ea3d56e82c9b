package register

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/history"
)

func start(t *testing.T, fencing bool) (*Server, *[]history.Event) {
	t.Helper()
	var log []history.Event
	s := &Server{Fencing: fencing, Record: func(e history.Event) { log = append(log, e) }}
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, &log
}

func TestReadModifyWrite(t *testing.T) {
	s, log := start(t, false)
	c := Dial(s.Addr())
	defer c.Close()
	v, err := c.Read("c1", "L1", 0)
	if err != nil || v != 0 {
		t.Fatalf("read %d %v", v, err)
	}
	if err := c.Write("c1", "L1", 0, v+1); err != nil {
		t.Fatal(err)
	}
	if s.Value() != 1 || len(*log) != 2 || (*log)[1].Access != "write" || *(*log)[1].Value != 1 || (*log)[0].Lease != "L1" {
		t.Fatalf("value %d log %+v", s.Value(), *log)
	}
	if (*log)[0].Time > (*log)[1].Time {
		t.Fatal("accesses recorded out of order")
	}
}

// In fencing mode any access with a token older than the newest seen is
// refused and changes nothing; without fencing tokens are ignored.
func TestFencingRejectsStaleTokens(t *testing.T) {
	s, log := start(t, true)
	a, b := Dial(s.Addr()), Dial(s.Addr())
	defer a.Close()
	defer b.Close()
	if _, err := a.Read("c1", "L33", 33); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Read("c2", "L34", 34); err != nil {
		t.Fatal(err)
	}
	if err := b.Write("c2", "L34", 34, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.Write("c1", "L33", 33, 1); !errors.Is(err, ErrRejected) {
		t.Fatalf("stale write: %v, want ErrRejected", err)
	}
	if s.Value() != 1 {
		t.Fatalf("value %d after a refused write", s.Value())
	}
	last := (*log)[len(*log)-1]
	if !last.Rejected || last.Value != nil || last.Fence != 33 {
		t.Fatalf("refused access recorded as %+v", last)
	}
	// Equal tokens (the same holder) pass.
	if err := b.Write("c2", "L34", 34, 2); err != nil {
		t.Fatal(err)
	}
	s2, _ := start(t, false)
	c := Dial(s2.Addr())
	defer c.Close()
	c.Write("c1", "x", 10, 5)
	if err := c.Write("c1", "y", 1, 6); err != nil {
		t.Fatalf("without fencing, tokens must be ignored: %v", err)
	}
}

func TestMalformedRequestsAreRefused(t *testing.T) {
	s, log := start(t, false)
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	for _, req := range []string{"HELLO", "READ a b", "READ a b x", "WRITE a b 0", "WRITE a b 0 x", "DELETE a b 0"} {
		conn.Write([]byte(req + "\n"))
		line, _ := r.ReadString('\n')
		if !strings.HasPrefix(line, "ERR ") {
			t.Errorf("%q answered %q, want ERR", req, line)
		}
	}
	if len(*log) != 0 {
		t.Fatalf("malformed requests were recorded: %+v", *log)
	}
}

// Each key has its own register and its own newest fencing token; the
// access events carry the key.
func TestRegistersPerKey(t *testing.T) {
	s, log := start(t, true)
	c := Dial(s.Addr())
	defer c.Close()
	if err := c.WriteKey("a", "c1", "L1", 10, 5); err != nil {
		t.Fatal(err)
	}
	// Key b has seen no token yet: fence 3 passes there.
	if err := c.WriteKey("b", "c2", "L2", 3, 7); err != nil {
		t.Fatalf("key b refused a token only key a had outdated: %v", err)
	}
	if err := c.WriteKey("a", "c2", "L2", 3, 9); !errors.Is(err, ErrRejected) {
		t.Fatalf("stale write on key a: %v, want ErrRejected", err)
	}
	if v, err := c.ReadKey("a", "c1", "L1", 10); err != nil || v != 5 {
		t.Fatalf("key a reads %d, %v; want 5", v, err)
	}
	if s.ValueOf("b") != 7 || s.Value() != 0 {
		t.Fatalf("registers a=%d b=%d empty=%d", s.ValueOf("a"), s.ValueOf("b"), s.Value())
	}
	for _, e := range *log {
		if e.Key == "" {
			t.Fatalf("access without its key: %+v", e)
		}
	}
	if (*log)[1].Key != "b" {
		t.Fatalf("second access recorded with key %q", (*log)[1].Key)
	}
}
