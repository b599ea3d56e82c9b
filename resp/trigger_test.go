package resp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// call is one client call observed from outside: whether it had returned
// when the hold's callback looked, and when it returned.
type call struct {
	returned   atomic.Bool
	returnedAt time.Time
	done       chan struct{}
}

func newCall() *call { return &call{done: make(chan struct{})} }

// run starts f and records when it returns.
func (c *call) run(f func()) *call {
	go func() {
		f()
		c.returnedAt = time.Now()
		c.returned.Store(true)
		close(c.done)
	}()
	return c
}

// heldUntil checks that a call was held until a release: it had not
// returned when the callback looked, and returned after the release.
func heldUntil(c *call, returnedDuringHold bool, releasedAt time.Time) error {
	<-c.done
	if returnedDuringHold {
		return errors.New("the call returned while the hold was on")
	}
	if c.returnedAt.Before(releasedAt) {
		return fmt.Errorf("the call returned at %v, before the release at %v", c.returnedAt, releasedAt)
	}
	return nil
}

// A command held AtRequest has not reached the node during the hold, and
// its client gets the reply only after the release; meanwhile another
// connection through the same tap keeps flowing. The same observation with
// an AtReply trigger sees the command executed during the hold, and the
// other connection's call is seen to return during the hold: both checks
// can fail.
func TestTriggerHoldsUntilRelease(t *testing.T) {
	node := startRedis(t)
	for _, at := range []Phase{AtRequest, AtReply} {
		t.Run(at.String(), func(t *testing.T) {
			reg := NewRegistry()
			tap := newTap(t, reg, "c1", "n1", node)
			ctx := ctxT(t)
			key := "lock:" + at.String()
			direct, rdb, other := newClient(t, node, 2), newClient(t, tap.Addr(), 2), newClient(t, tap.Addr(), 3)
			if err := rdb.Ping(ctx).Err(); err != nil { // the connection exists before the hold
				t.Fatal(err)
			}
			held, unheld := newCall(), (*call)(nil)
			var executed, heldReturned, otherReturned bool
			var callbackEnd time.Time
			a := arm(t, reg, Trigger{Names: []string{"SET"}, Key: "lock:*", At: at, OnFire: func(ctx context.Context, f Fire) {
				n, err := direct.Exists(ctx, key).Result()
				executed = err == nil && n == 1
				unheld = newCall().run(func() { other.Set(ctx, "other:"+at.String(), "1", 0) })
				<-unheld.done
				otherReturned = unheld.returned.Load()
				heldReturned = held.returned.Load()
				callbackEnd = time.Now()
			}})
			var setErr error
			held.run(func() { setErr = rdb.Set(ctx, key, "token", 0).Err() })
			rel := released(t, a)
			if err := heldUntil(held, heldReturned, rel.ReleasedAt); err != nil {
				t.Errorf("the held SET: %v", err)
			}
			if setErr != nil {
				t.Errorf("the held SET failed: %v", setErr)
			}
			if rel.ReleasedAt.Before(callbackEnd) || rel.Expired || rel.Closed {
				t.Errorf("release at %v (callback ended %v), expired %v, closed %v", rel.ReleasedAt, callbackEnd, rel.Expired, rel.Closed)
			}
			if err := heldUntil(unheld, otherReturned, rel.ReleasedAt); err == nil {
				t.Error("the other connection's SET counts as held: the check cannot fail")
			}
			if executed != (at == AtReply) {
				t.Errorf("%s: the SET executed during the hold: %v", at, executed)
			}
			if rel.Phase != at || rel.Client != "c1" || rel.Node != "n1" || rel.Command.Keys[0] != key || (at == AtReply) != (rel.Reply != nil) {
				t.Errorf("fire: %+v", rel.Fire)
			}
		})
	}
}

// A held request does not hold the replies of requests pipelined before
// it; the requests after it wait their turn.
func TestTriggerHeldRequestLetsEarlierRepliesOut(t *testing.T) {
	node := startRedis(t)
	reg := NewRegistry()
	tap := newTap(t, reg, "c1", "n1", node)
	direct := newClient(t, node, 2)
	c := dialRaw(t, tap.Addr())
	var first []byte
	var readErr error
	var heldSet bool
	a := arm(t, reg, Trigger{Names: []string{"SET"}, Key: "held", OnFire: func(ctx context.Context, f Fire) {
		first, readErr = c.replies(1)
		n, _ := direct.Exists(ctx, "held").Result()
		heldSet = n == 1
	}})
	c.Write([]byte(resp("SET", "a", "1") + resp("SET", "held", "1") + resp("GET", "a")))
	released(t, a)
	if string(first) != "+OK\r\n" || readErr != nil || heldSet {
		t.Fatalf("during the hold: first reply %q (want +OK), %v; held SET executed %v", first, readErr, heldSet)
	}
	if rest := c.readReplies(t, 2); string(rest) != "+OK\r\n$1\r\n1\r\n" {
		t.Fatalf("after the release: %q", rest)
	}
}

// A held reply does not hold the client's next requests: they reach the
// node during the hold, and their replies follow the held one in order.
func TestTriggerHeldReplyLetsRequestsThrough(t *testing.T) {
	node := startRedis(t)
	reg := NewRegistry()
	tap := newTap(t, reg, "c1", "n1", node)
	direct := newClient(t, node, 2)
	c := dialRaw(t, tap.Addr())
	var markerSet bool
	var early int
	a := arm(t, reg, Trigger{Names: []string{"GET"}, Key: "k", At: AtReply, OnFire: func(ctx context.Context, f Fire) {
		c.Write([]byte(resp("SET", "marker", "1")))
		markerSet = waitFor(func() bool { n, _ := direct.Exists(ctx, "marker").Result(); return n == 1 }) == nil
		// Nothing may have reached the client yet (a late byte would only
		// hide a failure, never fake one).
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		early, _ = c.r.Read(make([]byte, 1))
		c.SetReadDeadline(time.Now().Add(waitLimit))
	}})
	c.Write([]byte(resp("GET", "k")))
	released(t, a)
	if !markerSet || early != 0 {
		t.Fatalf("during the hold: marker set %v, %d bytes reached the client", markerSet, early)
	}
	if got := c.readReplies(t, 2); string(got) != "$-1\r\n+OK\r\n" {
		t.Fatalf("after the release: %q", got)
	}
}

// A callback that does not return is cut off at the hold limit: the
// message goes on, the Release and a note say so.
func TestTriggerHoldLimit(t *testing.T) {
	node := startRedis(t)
	reg := NewRegistry()
	tap := newTap(t, reg, "c1", "n1", node)
	a := arm(t, reg, Trigger{Names: []string{"SET"}, HoldLimit: 100 * time.Millisecond, OnFire: func(ctx context.Context, f Fire) {
		<-ctx.Done()
	}})
	if err := newClient(t, tap.Addr(), 2).Set(ctxT(t), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if rel := released(t, a); !rel.Expired || rel.Closed {
		t.Errorf("expired %v closed %v, want expired", rel.Expired, rel.Closed)
	}
	notes := reg.Notes()
	if len(notes) != 1 || notes[0].Kind != NoteHoldExpired || !strings.Contains(notes[0].Detail, "SET") {
		t.Errorf("notes %+v, want one hold-expired", notes)
	}
}

// Nth counts matches across the taps of a registry; Disarm stops a
// trigger before it fires.
func TestTriggerNthAndDisarm(t *testing.T) {
	node := startRedis(t)
	reg := NewRegistry()
	c1 := newClient(t, newTap(t, reg, "c1", "n1", node).Addr(), 2)
	c2 := newClient(t, newTap(t, reg, "c2", "n1", node).Addr(), 3)
	ctx := ctxT(t)
	third := arm(t, reg, Trigger{Names: []string{"SET"}, Nth: 3})
	never := arm(t, reg, Trigger{Names: []string{"SET"}, Nth: 2})
	if !never.Disarm() || never.Disarm() {
		t.Fatal("Disarm: want true the first time, false after")
	}
	for i := range 5 {
		rdb := c1
		if i%2 == 1 {
			rdb = c2
		}
		if err := rdb.Set(ctx, fmt.Sprintf("n:%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rel := released(t, third)
	if rel.Command.Keys[0] != "n:2" || rel.Client != "c1" || rel.Nth != 3 || third.Matched() != 3 {
		t.Errorf("fired on %s by %s, nth %d, matched %d; want n:2 by c1, 3, 3", rel.Command, rel.Client, rel.Nth, third.Matched())
	}
	notFired(t, never)
	if never.Matched() != 0 {
		t.Errorf("a disarmed trigger counted %d matches", never.Matched())
	}
}
