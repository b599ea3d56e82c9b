package lockfaulttest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	// The Docker backend, as a user opts into it: without this import the
	// nodes run as local processes (LOCKFAULT_BACKEND=auto means process).
	_ "github.com/lockfault/lockfault/cluster/docker"

	"github.com/lockfault/lockfault/lockfaulttest"
)

// minimal is a user's lock as it would live in their own module: SET NX
// PX, released by a compare-and-delete script. sloppy is the same lock
// with one bug, its release is a plain DEL of whatever key is there.
type minimal struct {
	rdb    *redis.Client
	cfg    lockfaulttest.Config
	sloppy bool
}

var release = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

func newMinimal(sloppy bool) func(lockfaulttest.Config) (lockfaulttest.Lock, error) {
	return func(cfg lockfaulttest.Config) (lockfaulttest.Lock, error) {
		return &minimal{rdb: redis.NewClient(&redis.Options{Addr: cfg.Endpoints.Primary, MaxRetries: -1}), cfg: cfg, sloppy: sloppy}, nil
	}
}

func (m *minimal) Acquire(ctx context.Context, res string, o lockfaulttest.AcquireOptions) (*lockfaulttest.Lease, error) {
	token := m.cfg.ClientID + "-" + time.Now().Format("150405.000000000")
	deadline := time.Now().Add(o.Wait)
	for {
		start := time.Now()
		var ok bool
		var err error
		if m.sloppy {
			// The bug: SET without NX overwrites a held lock.
			err = m.rdb.Set(ctx, "lock:"+res, token, o.TTL).Err()
			ok = err == nil
		} else {
			ok, err = m.rdb.SetNX(ctx, "lock:"+res, token, o.TTL).Result()
		}
		if err != nil {
			return nil, err
		}
		if ok {
			return &lockfaulttest.Lease{Resource: res, Token: token, Validity: o.TTL, ValidUntil: start.Add(o.TTL)}, nil
		}
		if time.Now().After(deadline) {
			return nil, lockfaulttest.ErrNotAcquired
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (m *minimal) Release(ctx context.Context, l *lockfaulttest.Lease) error {
	n, err := release.Run(ctx, m.rdb, []string{"lock:" + l.Resource}, l.Token).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return lockfaulttest.ErrNotHeld
	}
	return nil
}

func (m *minimal) Close() error { return m.rdb.Close() }

var (
	minimalLock = lockfaulttest.LockDef{Info: lockfaulttest.Info{Name: "lft-minimal", Needs: lockfaulttest.NeedsSingle}, New: newMinimal(false)}
	noNXLock    = lockfaulttest.LockDef{Info: lockfaulttest.Info{Name: "lft-no-nx", Needs: lockfaulttest.NeedsSingle}, New: newMinimal(true)}
)

// The correct lock passes the properties it claims (the others skip);
// examples/golock runs the whole suite, this test two properties.
func TestMinimalLock(t *testing.T) {
	lockfaulttest.Run(t, minimalLock, lockfaulttest.Options{Backend: "process", Cycles: 2, ReportsDir: t.TempDir(),
		Only: []string{"exclusion/no-faults", "crash"}})
}

// The copy with one bug gets a card with the violation, and Explain says
// what happened in sentences.
func TestBrokenCopyIsViolated(t *testing.T) {
	c, err := lockfaulttest.Suite(t, noNXLock, lockfaulttest.Options{Backend: "process", Cycles: 2,
		ReportsDir: t.TempDir(), Only: []string{"exclusion/no-faults"}})
	if err != nil {
		t.Fatal(err)
	}
	row, ok := c.Row("exclusion/no-faults")
	if !ok || row.Outcome != lockfaulttest.Violated {
		t.Fatalf("the lock without NX was not caught: %+v", c.Rows)
	}
	msg := lockfaulttest.Explain(row)
	for _, w := range []string{"property exclusion/no-faults is violated", "promise:", "observed: overlap", "Two holders at once", "report:", "report.md"} {
		if !strings.Contains(msg, w) {
			t.Errorf("explanation lacks %q:\n%s", w, msg)
		}
	}
}

// Run keeps the newest five runs of a property whose report it keeps (a
// known violation here): six earlier finished runs in its folder, then
// this one, leave five, this one among them.
func TestRunKeepsTheNewestFiveReports(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "gotest", noNXLock.Info.Name, "exclusion-no-faults")
	for i := range 6 {
		old := filepath.Join(dir, fmt.Sprintf("20200101-0000%02d-a1b2c3", i))
		if err := os.MkdirAll(old, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(old, "report.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("run", func(t *testing.T) {
		lockfaulttest.Run(t, noNXLock, lockfaulttest.Options{Backend: "process", Cycles: 1, ReportsDir: root,
			Only:            []string{"exclusion/no-faults"},
			KnownViolations: map[string]string{"exclusion/no-faults": "this copy sets without NX"}})
	})
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 5 || !strings.HasPrefix(names[4], time.Now().Format("2006")) {
		t.Errorf("the property's folder holds %v, want the newest five runs, this one last", names)
	}
}

// A bad description or bad options fail the test before anything starts.
func TestBadDefinitionsAndOptionsAreRefused(t *testing.T) {
	f := newMinimal(false)
	cases := []struct {
		def  lockfaulttest.LockDef
		opts lockfaulttest.Options
		want string
	}{
		{lockfaulttest.LockDef{Info: lockfaulttest.Info{Name: "", Needs: "single"}, New: f}, lockfaulttest.Options{}, "Info.Name must be"},
		{lockfaulttest.LockDef{Info: lockfaulttest.Info{Name: "x", Needs: "zookeeper"}, New: f}, lockfaulttest.Options{}, `Info.Needs "zookeeper" is not allowed (allowed: single, masters, etcd, cluster)`},
		{lockfaulttest.LockDef{Info: lockfaulttest.Info{Name: "x", Needs: "single", Caps: []string{"teleport"}}, New: f}, lockfaulttest.Options{}, `Info.Caps: "teleport" is not allowed`},
		{lockfaulttest.LockDef{Info: lockfaulttest.Info{Name: "x", Needs: "single"}}, lockfaulttest.Options{}, "New is nil"},
		{lockfaulttest.LockDef{Info: lockfaulttest.Info{Name: "single", Needs: "single"}, New: f}, lockfaulttest.Options{}, "the name is taken"},
		{minimalLock, lockfaulttest.Options{Backend: "vm"}, `"vm" is not allowed (allowed: docker, process, auto)`},
		{minimalLock, lockfaulttest.Options{Cycles: 5000}, "-cycles 5000: want 0 (the property's own) to 1000"},
		{minimalLock, lockfaulttest.Options{Only: []string{"no/such"}}, `no property matches "no/such"`},
		{minimalLock, lockfaulttest.Options{KnownViolations: map[string]string{"no/such": "x"}}, `"no/such" is not a property`},
	}
	for _, c := range cases {
		rec := &recorder{TB: t}
		func() {
			defer func() { recover() }() // Fatal ends the call
			if _, err := lockfaulttest.Suite(rec, c.def, c.opts); err != nil {
				rec.msg = err.Error()
			}
		}()
		if !strings.Contains(rec.msg, c.want) {
			t.Errorf("%+v %+v: %q, want %q", c.def.Info, c.opts, rec.msg, c.want)
		}
	}
}

// recorder is a testing.TB whose Fatal records the message and stops the
// call (by panicking, which the caller recovers) instead of failing the
// test.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatal(args ...any) {
	r.msg = fmt.Sprint(args...)
	panic(r.msg)
}
