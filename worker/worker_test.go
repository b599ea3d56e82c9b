package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/register"
)

// session runs a worker on a pipe and returns a way to send lines and read messages.
func session(t *testing.T) (send func(string), recv func() Message) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	w := New(outW)
	go func() { w.Serve(inR); outW.Close() }()
	t.Cleanup(func() { inW.Close() })
	sc := bufio.NewScanner(outR)
	send = func(s string) { fmt.Fprintln(inW, s) }
	recv = func() Message {
		t.Helper()
		ch := make(chan Message, 1)
		go func() {
			var m Message
			if sc.Scan() {
				json.Unmarshal(sc.Bytes(), &m)
			}
			ch <- m
		}()
		select {
		case m := <-ch:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no message from worker")
		}
		return Message{}
	}
	return send, recv
}

func TestMalformedLinesNameTheLine(t *testing.T) {
	send, recv := session(t)
	send(`{"cmd":`)
	m := recv()
	if m.Type != "error" || m.Line != 1 || !strings.Contains(m.Error, "stdin:1") {
		t.Fatalf("got %+v", m)
	}
	send(`{"cmd":"fly"}`)
	m = recv()
	if m.Line != 2 || !strings.Contains(m.Error, "unknown command") || !strings.Contains(m.Error, "allowed:") {
		t.Fatalf("got %+v", m)
	}
	send(`{"cmd":"acquire","op":1,"key":"x","ttl_ms":100}`)
	m = recv()
	if m.Line != 3 || !strings.Contains(m.Error, "before init") {
		t.Fatalf("got %+v", m)
	}
	send(`{"cmd":"init","client":"c1","lock":"single","colour":"red"}`)
	m = recv()
	if m.Line != 4 || !strings.Contains(m.Error, "colour") {
		t.Fatalf("unknown field: got %+v", m)
	}
}

// A whole round against a real redis-server and a real resource.
func TestRoundAgainstRealRedis(t *testing.T) {
	ctx := context.Background()
	b, err := cluster.NewProcess("worker-test")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	n, err := b.Start(ctx, cluster.NodeSpec{Name: "n1", Kind: cluster.KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	var accesses []history.Event
	res := &register.Server{Record: func(e history.Event) { accesses = append(accesses, e) }}
	if err := res.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	send, recv := session(t)
	send(fmt.Sprintf(`{"cmd":"init","client":"c1","lock":"single","endpoints":{"primary":%q},"resource":%q}`, n.Addr(), res.Addr()))
	if m := recv(); m.Type != "ready" {
		t.Fatalf("init: %+v", m)
	}
	send(`{"cmd":"acquire","op":1,"key":"order","lease":"L1","ttl_ms":5000}`)
	m := recv()
	if m.Status != StatusOK || m.Lease != "L1" || m.ValidUntil <= history.Now() {
		t.Fatalf("acquire: %+v", m)
	}
	send(`{"cmd":"acquire","op":2,"key":"order","lease":"L2","ttl_ms":5000}`)
	if m := recv(); m.Status != StatusFail {
		t.Fatalf("second acquire of a held lock: %+v, want fail", m)
	}
	send(`{"cmd":"failpoint","name":"cs-before-write","action":"sleep","ms":1}`)
	send(`{"cmd":"cs","op":3,"lease":"L1","hold_ms":1}`)
	if m := recv(); m.Type != TypeFired || m.Name != "cs-before-write" || m.Action != "sleep" {
		t.Fatalf("armed failpoint: got %+v, want a fired message before the reply", m)
	}
	if m := recv(); m.Status != StatusOK || *m.Read != 0 || *m.Wrote != 1 {
		t.Fatalf("cs: %+v", m)
	}
	send(`{"cmd":"release","op":4,"lease":"L1"}`)
	if m := recv(); m.Status != StatusOK {
		t.Fatalf("release: %+v", m)
	}
	if res.ValueOf("order") != 1 || len(accesses) != 2 || accesses[0].Lease != "L1" || accesses[0].Key != "order" {
		t.Fatalf("resource value %d, accesses %+v", res.Value(), accesses)
	}

	// A lock that cannot extend says so: fail with code not-supported.
	send2, recv2 := session(t)
	send2(`{"cmd":"init","client":"c2","lock":"setnx-expire","resource":"` + res.Addr() + `"}`)
	if m := recv2(); m.Type != "ready" {
		t.Fatalf("init without endpoints: %+v", m)
	}
	send2(fmt.Sprintf(`{"cmd":"endpoints","endpoints":{"primary":%q}}`, n.Addr()))
	send2(`{"cmd":"acquire","op":1,"key":"other","lease":"M1","ttl_ms":5000}`)
	if m := recv2(); m.Status != StatusOK {
		t.Fatalf("acquire after endpoints: %+v", m)
	}
	send2(`{"cmd":"extend","op":2,"lease":"M1","ttl_ms":5000}`)
	if m := recv2(); m.Status != StatusFail || m.Code != CodeNotSupported {
		t.Fatalf("extend on setnx-expire: %+v, want fail with code not-supported", m)
	}
}
