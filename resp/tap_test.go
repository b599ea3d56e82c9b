package resp

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Real go-redis traffic through a tap, RESP2 and RESP3: every command gets
// its own reply (checked by the value of sampled GETs, which non-holding
// reply triggers see), and the tap parses every byte (no notes).
func TestTapGoRedis(t *testing.T) {
	node := startRedis(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			reg := NewRegistry()
			tap := newTap(t, reg, "c1", "n1", node)
			rdb := newClient(t, tap.Addr(), proto)
			ctx := ctxT(t)
			p := fmt.Sprintf("r%d:", proto)

			// A pipeline of SET and GET pairs; every 25th GET's reply is checked.
			const n = 200
			var samples []*Armed
			for i := 0; i < n; i += 25 {
				samples = append(samples, arm(t, reg, Trigger{Names: []string{"GET"}, Key: fmt.Sprintf("%sp:%d", p, i), At: AtReply}))
			}
			cmds, err := rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
				for i := range n {
					pl.Set(ctx, fmt.Sprintf("%sp:%d", p, i), fmt.Sprintf("v%d", i), 0)
					pl.Get(ctx, fmt.Sprintf("%sp:%d", p, i))
				}
				return nil
			})
			if err != nil || len(cmds) != 2*n {
				t.Fatalf("pipeline: %d replies, %v", len(cmds), err)
			}
			for i, a := range samples {
				rel := released(t, a)
				if want := fmt.Sprintf("v%d", 25*i); rel.Reply.Kind != KindBulk || rel.Reply.Text != want {
					t.Errorf("GET %v paired with reply %s %q, want bulk %q", rel.Command.Keys, rel.Reply, rel.Reply.Text, want)
				}
			}

			// MULTI … EXEC: queued commands get QUEUED, EXEC runs them.
			exec := arm(t, reg, Trigger{Names: []string{"EXEC"}, Key: p + "tx:*", At: AtReply})
			queued := arm(t, reg, Trigger{Names: []string{"INCR"}, At: AtReply})
			if _, err := rdb.TxPipelined(ctx, func(pl redis.Pipeliner) error {
				pl.Set(ctx, p+"tx:a", "1", 0)
				pl.Incr(ctx, p+"tx:b")
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if rel := released(t, exec); rel.Reply.Kind != KindArray || rel.Reply.Len != 2 || len(rel.Command.Tx) != 2 || !rel.Command.Write {
				t.Errorf("EXEC: reply %s, tx %d commands, write %v; want array 2, 2, true", rel.Reply, len(rel.Command.Tx), rel.Command.Write)
			}
			if rel := released(t, queued); rel.Reply.Kind != KindQueued || !rel.Command.Queued {
				t.Errorf("INCR inside MULTI: reply %s, queued %v; want queued", rel.Reply, rel.Command.Queued)
			}
			if want := (Shape{Client: "c1", Name: "EXEC", Key: KeyPattern(p + "tx:a")}); !slices.Contains(reg.Seen(), want) {
				t.Errorf("shape %+v not seen: %+v", want, reg.Seen())
			}

			// EVALSHA, NOSCRIPT, EVAL, then EVALSHA again.
			src := fmt.Sprintf("return redis.call('incr', KEYS[1]) -- %d", proto)
			script := redis.NewScript(src)
			evalsha := arm(t, reg, Trigger{Names: []string{"EVALSHA"}, At: AtReply, Script: "redis.call('incr'"})
			for want := int64(1); want <= 2; want++ {
				if v, err := script.Run(ctx, rdb, []string{p + "ev"}).Int64(); err != nil || v != want {
					t.Fatalf("script run %d: %v, %v", want, v, err)
				}
			}
			if rel := released(t, evalsha); rel.Reply.Kind != KindInt || rel.Reply.Int != 2 || rel.Command.SHA != script.Hash() {
				t.Errorf("EVALSHA fired on reply %s sha %s; want the second run's integer 2, sha %s", rel.Reply, rel.Command.SHA, script.Hash())
			}

			// A value of several MiB, across many reads both ways.
			big := make([]byte, 8<<20+3)
			rand.Read(big)
			getBig := arm(t, reg, Trigger{Names: []string{"GET"}, Key: p + "big", At: AtReply})
			if err := rdb.Set(ctx, p+"big", big, 0).Err(); err != nil {
				t.Fatal(err)
			}
			got, err := rdb.Get(ctx, p+"big").Bytes()
			if err != nil || !bytes.Equal(got, big) {
				t.Fatalf("big value: %d bytes back (want %d), equal %v, %v", len(got), len(big), bytes.Equal(got, big), err)
			}
			if rel := released(t, getBig); rel.Reply.Len != int64(len(big)) {
				t.Errorf("big GET reply length %d, want %d", rel.Reply.Len, len(big))
			}

			// Pub/sub on its own connection, then a command on that connection.
			ps := rdb.Subscribe(ctx, p+"ch")
			defer ps.Close()
			if _, err := ps.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			if err := newClient(t, node, 2).Publish(ctx, p+"ch", "hello").Err(); err != nil {
				t.Fatal(err)
			}
			msg, err := ps.ReceiveMessage(ctx)
			if err != nil || msg.Payload != "hello" {
				t.Fatalf("pub/sub message %v, %v", msg, err)
			}
			if err := ps.Ping(ctx); err != nil {
				t.Fatal(err)
			}
			if err := rdb.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}

			unpaired := 0
			for _, n := range reg.Notes() {
				switch n.Kind {
				case NoteUnpaired:
					unpaired++
					if !strings.Contains(n.Detail, "RESP2 pub/sub") {
						t.Errorf("unexpected note %+v", n)
					}
				default:
					t.Errorf("unexpected note %+v", n)
				}
			}
			// RESP2 pub/sub replies are messages: pairing stops on that
			// connection. RESP3 sends them as pushes: pairing goes on.
			if want := map[int]int{2: 1, 3: 0}[proto]; unpaired != want {
				t.Errorf("%d unpaired notes, want %d", unpaired, want)
			}
		})
	}
}

// A raw client writing one byte at a time (arrays, inline commands, a
// value longer than the tap's buffer) gets from the tap exactly what it
// gets from the node directly.
func TestTapOneByteAtATime(t *testing.T) {
	node := startRedis(t)
	reg := NewRegistry()
	tap := newTap(t, reg, "c1", "n1", node)
	big := strings.Repeat("0123456789", ReadBufSize/10+7)
	script := func(p string) (string, int) {
		s := resp("SET", p+"a", "1") + resp("GET", p+"a") + "incr " + p + "n\r\n" +
			"set " + p + "b \"x y\\x21\"\n" + resp("GET", p+"b") + resp("SET", p+"big", big) +
			resp("GET", p+"big") + resp("GET", p+"missing") + resp("DEL", p+"a", p+"b", p+"big", p+"n")
		return s, 9
	}
	inline := arm(t, reg, Trigger{Names: []string{"SET"}, Key: "t:b"})
	getBig := arm(t, reg, Trigger{Names: []string{"GET"}, Key: "t:big", At: AtReply})

	direct, n := script("d:")
	dc := dialRaw(t, node)
	dc.Write([]byte(direct))
	want := dc.readReplies(t, n)

	through, _ := script("t:")
	tc := dialRaw(t, tap.Addr())
	for i := range len(through) {
		if _, err := tc.Write([]byte{through[i]}); err != nil {
			t.Fatal(err)
		}
	}
	if got := tc.readReplies(t, n); !bytes.Equal(got, want) {
		t.Fatalf("through the tap:\n%q\ndirect:\n%q", clip(got), clip(want))
	}
	if rel := released(t, inline); !rel.Command.Inline || rel.Command.Argv[2] != "x y!" {
		t.Errorf("inline SET seen as %q inline=%v", rel.Command.Argv, rel.Command.Inline)
	}
	if rel := released(t, getBig); rel.Reply.Len != int64(len(big)) || rel.Reply.Text != big[:MaxReplyText] {
		t.Errorf("GET big: reply %s", rel.Reply)
	}
	if notes := reg.Notes(); len(notes) > 0 {
		t.Errorf("notes: %+v", notes)
	}
}

// RESP3 pushes (client-side caching invalidations here) are forwarded and
// not paired: the reply after one still pairs with its command.
func TestTapSkipsPushes(t *testing.T) {
	node := startRedis(t)
	reg := NewRegistry()
	tap := newTap(t, reg, "c1", "n1", node)
	c := dialRaw(t, tap.Addr())
	c.Write([]byte(resp("HELLO", "3") + resp("CLIENT", "TRACKING", "ON") + resp("GET", "tracked")))
	c.readReplies(t, 3)
	if err := newClient(t, node, 2).Set(ctxT(t), "tracked", "changed", 0).Err(); err != nil {
		t.Fatal(err)
	}
	get := arm(t, reg, Trigger{Names: []string{"GET"}, Key: "other", At: AtReply})
	c.Write([]byte(resp("SET", "other", "v") + resp("GET", "other")))
	got := c.readReplies(t, 2)
	if !bytes.HasPrefix(got, []byte(">2\r\n$10\r\ninvalidate\r\n")) {
		t.Fatalf("no invalidation push before the replies: %q", got)
	}
	if rel := released(t, get); rel.Reply.Kind != KindBulk || rel.Reply.Text != "v" {
		t.Errorf("GET other paired with %s %q, want bulk \"v\"", rel.Reply, rel.Reply.Text)
	}
}

// A stream the parser refuses is forwarded untouched (the node answers it
// as it would directly) and the tap notes why.
func TestTapPassesThroughWhatItCannotParse(t *testing.T) {
	node := startRedis(t)
	reg := NewRegistry()
	tap := newTap(t, reg, "c1", "n1", node)
	bad := resp("PING") + "*1\r\n$x\r\n"
	dc := dialRaw(t, node)
	dc.Write([]byte(bad))
	want, _ := readAll(dc)
	tc := dialRaw(t, tap.Addr())
	tc.Write([]byte(bad))
	got, _ := readAll(tc)
	if !bytes.Equal(got, want) || !bytes.Contains(got, []byte("Protocol error")) {
		t.Fatalf("through the tap %q, direct %q", got, want)
	}
	notes := reg.Notes()
	if len(notes) == 0 || notes[0].Kind != NotePassthrough || !strings.Contains(notes[0].Detail, "argument 0 length") {
		t.Fatalf("notes %+v, want a passthrough about argument 0's length", notes)
	}
}

// readAll reads until the peer closes.
func readAll(c *rawConn) ([]byte, error) {
	var out bytes.Buffer
	_, err := out.ReadFrom(c.r)
	return out.Bytes(), err
}

// A client that closes in the middle of a command: the tap forwards what
// came and ends the connection; the tap keeps serving others.
func TestTapClientClosesMidCommand(t *testing.T) {
	node := startRedis(t)
	reg := NewRegistry()
	tap := newTap(t, reg, "c1", "n1", node)
	c := dialRaw(t, tap.Addr())
	c.Write([]byte(resp("SET", "half", "1")[:12]))
	c.Close()
	if err := waitFor(func() bool { return tapConns(tap) == 0 }); err != nil {
		t.Fatalf("connection still open: %v", err)
	}
	if err := newClient(t, tap.Addr(), 2).Set(ctxT(t), "whole", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := newClient(t, node, 2).Exists(ctxT(t), "half", "whole").Result(); err != nil || n != 1 {
		t.Fatalf("keys set: %d, %v; want only the whole command's", n, err)
	}
}

func tapConns(t *Tap) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}

// waitFor polls cond until it holds or waitLimit passes.
func waitFor(cond func() bool) error {
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", waitLimit)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// SetUpstream re-points new connections; open ones stay where they are.
func TestTapSetUpstream(t *testing.T) {
	a, b := startRedis(t), startRedis(t)
	tap := newTap(t, NewRegistry(), "c1", "n1", a)
	ctx := ctxT(t)
	old := dialRaw(t, tap.Addr())
	old.Write([]byte(resp("SET", "k", "a")))
	old.readReplies(t, 1)
	if err := tap.SetUpstream(b); err != nil {
		t.Fatal(err)
	}
	if err := tap.SetUpstream("nowhere"); err == nil {
		t.Error("SetUpstream accepted an address without a port")
	}
	if err := newClient(t, tap.Addr(), 2).Set(ctx, "k", "b", 0).Err(); err != nil {
		t.Fatal(err)
	}
	old.Write([]byte(resp("SET", "k2", "a")))
	old.readReplies(t, 1)
	for addr, want := range map[string]string{a: "a", b: "b"} {
		if v, err := newClient(t, addr, 2).Get(ctx, "k").Result(); err != nil || v != want {
			t.Errorf("node %s: k=%q, %v; want %q", addr, v, err, want)
		}
	}
	if n, _ := newClient(t, a, 2).Exists(ctx, "k2").Result(); n != 1 {
		t.Error("the connection opened before SetUpstream left its node")
	}
}

// Close ends every connection and goroutine the tap started, holds
// included. The count is checked while the tap is open too, so the check
// can fail.
func TestTapCloseLeavesNothing(t *testing.T) {
	node := startRedis(t)
	before := runtime.NumGoroutine()
	reg := NewRegistry()
	tap, err := Listen(reg, "c1", "n1", node)
	if err != nil {
		t.Fatal(err)
	}
	var conns []*rawConn
	for range 3 {
		c := dialRaw(t, tap.Addr())
		c.Write([]byte(resp("PING")))
		c.readReplies(t, 1)
		conns = append(conns, c)
	}
	holding := make(chan struct{})
	a := arm(t, reg, Trigger{Names: []string{"GET"}, OnFire: func(ctx context.Context, f Fire) {
		close(holding)
		<-ctx.Done()
	}})
	conns[0].Write([]byte(resp("GET", "x")))
	<-holding
	open := runtime.NumGoroutine()
	if open <= before {
		t.Fatalf("%d goroutines with the tap open, %d before: the check below could not fail", open, before)
	}
	if err := tap.Close(); err != nil {
		t.Fatal(err)
	}
	if rel := released(t, a); !rel.Closed || rel.Expired {
		t.Errorf("hold ended closed=%v expired=%v, want closed", rel.Closed, rel.Expired)
	}
	if err := waitFor(func() bool { return runtime.NumGoroutine() <= before }); err != nil {
		t.Fatalf("%d goroutines after Close, %d before", runtime.NumGoroutine(), before)
	}
	if _, err := conns[1].Read(make([]byte, 1)); err == nil {
		t.Error("a client connection is still open after Close")
	}
}
