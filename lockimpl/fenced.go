package lockimpl

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// FencedAcquireScript sets the lock key like SET NX PX and, only when that
// succeeds, increments the resource's fencing counter in the same script, so
// every grant carries a token strictly larger than every earlier grant's.
// KEYS[1] lock key, KEYS[2] fence counter; ARGV[1] holder token, ARGV[2] TTL
// in milliseconds. Returns the fencing token, or 0 when the lock is held.
const FencedAcquireScript = `if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
    return redis.call("incr", KEYS[2])
end
return 0`

var fencedAcquireScript = redis.NewScript(FencedAcquireScript)

func init() {
	Register(Info{
		Name:       "fenced",
		Source:     "003 §35.4.4 and 002 (Kleppmann: fencing tokens), on top of single",
		Promises:   "as single, and every grant carries a fencing token (INCR in the acquiring script) strictly larger than all earlier grants' for the resource, so a fenced resource rejects a stale holder",
		Needs:      "single",
		Caps:       []string{CapExtend, CapFencing},
		Failpoints: []string{"after-extend"},
	}, newFenced)
}

// fenced is single plus a fencing token: one Lua script does SET NX PX on
// the lock key and, if that succeeded, INCR on "fence:<resource>", and the
// lease's Fence is the result. Tokens live in Redis, so they increase across
// grants and across client restarts; they go backwards only if Redis itself
// loses the counter (a restart without persistence, or a failover to a
// replica that had not yet received the last INCR). It is the remedy for the
// paused-holder scenarios (claims C2/C3 and Kleppmann's GC pause): the lock
// still double-grants, but the resource can refuse the stale holder.
type fenced struct {
	cfg Config
	rdb redis.UniversalClient
}

func newFenced(cfg Config) (Lock, error) {
	rdb, err := NewPrimaryClient(cfg.Endpoints)
	if err != nil {
		return nil, err
	}
	return &fenced{cfg: cfg, rdb: rdb}, nil
}

// FenceKeyFor is the Redis key of a resource's fencing counter.
func FenceKeyFor(resource string) string { return "fence:" + resource }

// Acquire runs the fenced acquire script until it grants or opts.Wait runs
// out.
func (f *fenced) Acquire(ctx context.Context, resource string, opts AcquireOptions) (*Lease, error) {
	token := RandomToken()
	keys := []string{KeyFor(resource), FenceKeyFor(resource)}
	return RetryAcquire(ctx, opts.Wait, func() (*Lease, error) {
		start := time.Now()
		fence, err := fencedAcquireScript.Run(ctx, f.rdb, keys, token, opts.TTL.Milliseconds()).Int64()
		if err != nil {
			return nil, err
		}
		if fence == 0 {
			return nil, ErrNotAcquired
		}
		return &Lease{Resource: resource, Token: token, Fence: fence, Validity: opts.TTL, ValidUntil: start.Add(opts.TTL)}, nil
	})
}

// Release is the Lua compare-and-delete; the counter is never touched.
func (f *fenced) Release(ctx context.Context, l *Lease) error {
	return casRelease(ctx, f.rdb, l)
}

// Extend is the Lua compare-and-pexpire; the fencing token stays the same.
func (f *fenced) Extend(ctx context.Context, l *Lease, ttl time.Duration) error {
	return casExtend(ctx, f.rdb, f.cfg, l, ttl)
}

func (f *fenced) Close() error { return f.rdb.Close() }
