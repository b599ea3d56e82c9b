package faults

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/worker"
)

// env is a real cluster with one named client whose proxies exist but no
// worker process behind them.
type env struct {
	c        *cluster.Cluster
	repoints int
	notes    []string
}

type fakeClient struct {
	name string
	sent []worker.Command
}

func (f *fakeClient) Name() string                { return f.name }
func (f *fakeClient) Signal(syscall.Signal) error { return nil }
func (f *fakeClient) Proc() cluster.ProcState     { return cluster.ProcState{Pid: 1} }
func (f *fakeClient) Send(c worker.Command) error { f.sent = append(f.sent, c); return nil }

func (e *env) Cluster() *cluster.Cluster { return e.c }
func (e *env) Clients(target string) ([]Client, error) {
	return []Client{&fakeClient{name: "c1"}}, nil
}
func (e *env) Repoint(ctx context.Context) error { e.repoints++; return nil }
func (e *env) Clone(ctx context.Context, client string) (Heal, error) {
	return nil, fmt.Errorf("no clones here")
}
func (e *env) Logf(f string, a ...any) { e.notes = append(e.notes, fmt.Sprintf(f, a...)) }

func newEnv(t *testing.T, topo cluster.Topology) (*env, map[string]string) {
	t.Helper()
	ctx := context.Background()
	b, err := cluster.NewProcess("faults")
	if err != nil {
		t.Fatal(err)
	}
	nw, err := cluster.NewNet(b.ProxyHost(), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Start(ctx, b, nw, topo)
	if err != nil {
		b.Close(ctx)
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	addrs, err := c.ClientAddrs("c1")
	if err != nil {
		t.Fatal(err)
	}
	return &env{c: c}, addrs
}

func inject(t *testing.T, e *env, name, target string, p Params) Heal {
	t.Helper()
	f, _, err := Get(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(name, p); err != nil {
		t.Fatal(err)
	}
	h, err := f.Inject(context.Background(), e, target, p)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return h
}

func client(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, MaxRetries: -1})
}

func TestPartitionClientDropAndHeal(t *testing.T) {
	e, addrs := newEnv(t, cluster.Topology{Kind: lockfault.Masters, Masters: 2})
	r1, r2 := client(addrs["n1"]), client(addrs["n2"])
	defer r1.Close()
	defer r2.Close()
	ctx := context.Background()
	h := inject(t, e, "partition-client", "n1", Params{"clients": "c1", "mode": "drop"})
	if err := r1.Ping(ctx).Err(); err == nil {
		t.Fatal("PING crossed a dropped link")
	}
	if err := r2.Ping(ctx).Err(); err != nil {
		t.Fatalf("the other node must stay reachable: %v", err)
	}
	if err := h(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r1.Ping(ctx).Err(); err != nil {
		t.Fatalf("after heal: %v", err)
	}
}

func TestLatencyIsAdded(t *testing.T) {
	e, addrs := newEnv(t, cluster.Topology{Kind: lockfault.Standalone})
	r := redis.NewClient(&redis.Options{Addr: addrs["n1"]})
	defer r.Close()
	ctx := context.Background()
	r.Ping(ctx)
	h := inject(t, e, "latency", "n1", Params{"latency": "150ms", "direction": "to-node"})
	start := time.Now()
	if err := r.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// A lower bound on the injected delay: a property of the fault, not a
	// speed claim about anything.
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("PING took %v with 150ms latency injected", d)
	}
	h(ctx)
}

func TestKillHealRestartsBehindTheSameProxy(t *testing.T) {
	e, addrs := newEnv(t, cluster.Topology{Kind: lockfault.Standalone})
	r := client(addrs["n1"])
	defer r.Close()
	ctx := context.Background()
	h := inject(t, e, "kill", "primary", nil)
	if err := r.Ping(ctx).Err(); err == nil {
		t.Fatal("a killed node answered")
	}
	if err := h(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Ping(ctx).Err(); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

func TestPromoteAndRejoin(t *testing.T) {
	e, _ := newEnv(t, cluster.Topology{Kind: lockfault.Replicated, Replicas: 1})
	ctx := context.Background()
	inject(t, e, "kill", "primary", nil)
	h := inject(t, e, "promote", "replica", nil)
	if p := e.c.Primary(); p == nil || p.Name != "n2" || e.repoints != 1 {
		t.Fatalf("primary %v, repoints %d", p, e.repoints)
	}
	// The old primary comes back as a replica of n2.
	if err := e.c.Restart(ctx, e.c.Member("n1")); err != nil {
		t.Fatal(err)
	}
	if err := h(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.c.WaitReplicasSynced(ctx, 20*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestClockJumpMovesServerTime(t *testing.T) {
	if _, err := cluster.ClockShimPath(); err != nil {
		t.Skipf("clock shim not built: %v", err)
	}
	e, addrs := newEnv(t, cluster.Topology{Kind: lockfault.Standalone, ClockShim: true})
	r := client(addrs["n1"])
	defer r.Close()
	ctx := context.Background()
	if err := r.Set(ctx, "k", "v", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	h := inject(t, e, "clock-jump", "n1", Params{"by": "+11s"})
	if n, _ := r.Exists(ctx, "k").Result(); n != 0 {
		t.Fatal("a key with 10s left survived an 11s forward jump")
	}
	before, _ := r.Time(ctx).Result()
	h(ctx)
	after, _ := r.Time(ctx).Result()
	if d := before.Sub(after); d < 10*time.Second {
		t.Fatalf("heal stepped the clock back by %v, want about 11s", d)
	}
}

func TestFailpointParamsReachTheClient(t *testing.T) {
	e := &env{}
	fc := &fakeClient{name: "c1"}
	f, _, _ := Get("failpoint")
	h, err := f.Inject(context.Background(), envWith(e, fc), "c1", Params{"name": "before-release", "action": "stop", "ms": "1500ms", "count": "2"})
	if err != nil {
		t.Fatal(err)
	}
	want := worker.Command{Cmd: "failpoint", Name: "before-release", Action: "stop", Ms: 1500, Count: 2}
	if len(fc.sent) != 1 || !reflect.DeepEqual(fc.sent[0], want) {
		t.Fatalf("sent %+v, want %+v", fc.sent, want)
	}
	h(context.Background())
	if fc.sent[1].Action != "off" {
		t.Fatalf("heal sent %+v", fc.sent[1])
	}
}

type oneClient struct {
	*env
	c Client
}

func (o oneClient) Clients(string) ([]Client, error) { return []Client{o.c}, nil }

func envWith(e *env, c Client) Env { return oneClient{e, c} }

// TestClockClientStepsRepeatedly: with every, the client's wall clock is
// stepped again by `by` at each interval until the heal, which sets it back
// to 0 after the last step; bad params are refused with what is allowed.
func TestClockClientStepsRepeatedly(t *testing.T) {
	e := &env{}
	fc := &fakeClient{name: "c1"}
	f, _, _ := Get("clock-client")
	h, err := f.Inject(context.Background(), envWith(e, fc), "c1", Params{"by": "-300ms", "every": "10ms"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := h(context.Background()); err != nil {
		t.Fatal(err)
	}
	sent := fc.sent // the heal has stopped the stepping: no more sends
	if len(sent) < 5 {
		t.Fatalf("%d clock commands in 200ms of steps every 10ms, want several", len(sent))
	}
	for i, c := range sent[:len(sent)-1] {
		if want := int64(-300 * (i + 1)); c.Cmd != "clock" || c.OffsetMs != want {
			t.Fatalf("step %d sent %+v, want offset %d", i+1, c, want)
		}
	}
	if last := sent[len(sent)-1]; last.OffsetMs != 0 {
		t.Fatalf("heal sent %+v, want offset 0", last)
	}
	for params, want := range map[string]string{
		"every=5ms":  "param every: 5ms is out of range (allowed: 10ms to 10m0s",
		"every=soon": "param every: \"soon\" is not a duration",
		"by=9000h":   "param by: 9000h0m0s is out of range",
	} {
		p := Params{"by": "-1s"}
		k, v, _ := strings.Cut(params, "=")
		p[k] = v
		if err := Check("clock-client", p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", params, err, want)
		}
	}
}

// goneClient is a worker that died after the fault began (a crash-client
// in the same cycle): every signal and command says it is gone.
type goneClient struct {
	fakeClient
	dead bool
	err  error // what it returns once dead
}

func (g *goneClient) Proc() cluster.ProcState { return cluster.ProcState{} }

func (g *goneClient) Signal(syscall.Signal) error {
	if g.dead {
		return g.err
	}
	return nil
}

func (g *goneClient) Send(c worker.Command) error {
	if g.dead {
		return g.err
	}
	return g.fakeClient.Send(c)
}

// A heal of a client fault skips a client whose process died since the
// fault began (nothing is paused or stepped there any more: a hunt drew a
// crash of the paused holder, and the run ended as a harness failure at
// the pause's heal); any other failure of the heal is still an error.
func TestClientHealsSkipAGoneClient(t *testing.T) {
	for _, fault := range []string{"pause-client", "clock-client"} {
		for _, every := range []string{"", "10ms"} {
			if fault == "pause-client" && every != "" {
				continue
			}
			for _, tc := range []struct {
				err     error
				wantErr bool
			}{
				{fmt.Errorf("worker c1 is dead: %w", ErrClientGone), false},
				{fmt.Errorf("write |1: broken pipe"), true},
			} {
				gc := &goneClient{fakeClient: fakeClient{name: "c1"}, err: tc.err}
				f, _, _ := Get(fault)
				p := Params{"by": "-1s"}
				if every != "" {
					p["every"] = every
				}
				h, err := f.Inject(context.Background(), envWith(&env{}, gc), "c1", p)
				if err != nil {
					t.Fatal(err)
				}
				gc.dead = true
				time.Sleep(30 * time.Millisecond)
				if err := h(context.Background()); (err != nil) != tc.wantErr {
					t.Errorf("%s every=%q, client returning %q: heal returned %v, want error %v", fault, every, tc.err, err, tc.wantErr)
				}
			}
		}
	}
	// A client already gone when the fault begins is not reached: the
	// fault fails.
	gc := &goneClient{fakeClient: fakeClient{name: "c1"}, dead: true, err: ErrClientGone}
	for _, fault := range []string{"pause-client", "clock-client"} {
		f, _, _ := Get(fault)
		if _, err := f.Inject(context.Background(), envWith(&env{}, gc), "c1", Params{"by": "-1s"}); err == nil {
			t.Errorf("%s on a gone client: no error", fault)
		}
	}
}

type clients []Client

func (cs clients) env() Env { return manyClients{&env{}, cs} }

type manyClients struct {
	*env
	cs clients
}

func (m manyClients) Clients(string) ([]Client, error) { return m.cs, nil }

// A client fault on several clients reaches the live ones and skips one
// that has crashed and is not back yet (a hunt drew crash-client(c1), then
// pause-client(others) with c1 among the others: the run ended as a
// harness failure); with every one gone, the fault fails with
// ErrClientGone (the runner's not-exercised); any other failure undoes
// the clients reached so far.
func TestClientFaultsSkipGoneClients(t *testing.T) {
	for _, fault := range []string{"pause-client", "clock-client", "crash-client", "failpoint"} {
		p := Params{"by": "-1s", "name": "after-get", "action": "stop"}
		f, _, _ := Get(fault)
		dead := &goneClient{fakeClient: fakeClient{name: "c1"}, dead: true, err: fmt.Errorf("worker c1 is dead: %w", ErrClientGone)}
		live := &recordingClient{name: "c2"}
		h, err := f.Inject(context.Background(), clients{dead, live}.env(), "others", p)
		if err != nil {
			t.Fatalf("%s on a dead and a live client: %v", fault, err)
		}
		if len(live.calls) != 1 {
			t.Errorf("%s: the live client got %v", fault, live.calls)
		}
		if h != nil {
			if err := h(context.Background()); err != nil {
				t.Errorf("%s: heal: %v", fault, err)
			}
		}
		if _, err := f.Inject(context.Background(), clients{dead}.env(), "c1", p); !errors.Is(err, ErrClientGone) {
			t.Errorf("%s on a dead client only: %v, want ErrClientGone", fault, err)
		}
		// c2 reached, then c3 fails: c2 is undone.
		live = &recordingClient{name: "c2"}
		broken := &goneClient{fakeClient: fakeClient{name: "c3"}, dead: true, err: errors.New("write |1: broken pipe")}
		if _, err := f.Inject(context.Background(), clients{live, broken}.env(), "all", p); err == nil {
			t.Errorf("%s: a client that fails for another reason: no error", fault)
		}
		if fault != "crash-client" && len(live.calls) != 2 {
			t.Errorf("%s: the client reached before a failure was not undone: %v", fault, live.calls)
		}
	}
}

// recordingClient records each signal and command it gets.
type recordingClient struct {
	name  string
	calls []string
}

func (r *recordingClient) Name() string            { return r.name }
func (r *recordingClient) Proc() cluster.ProcState { return cluster.ProcState{Pid: 1} }

func (r *recordingClient) Signal(s syscall.Signal) error {
	r.calls = append(r.calls, s.String())
	return nil
}
func (r *recordingClient) Send(c worker.Command) error {
	r.calls = append(r.calls, c.Cmd+":"+c.Action)
	return nil
}
