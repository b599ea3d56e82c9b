package golibs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
	"github.com/redis/go-redis/v9"
)

// gocronObserver is a go-redis hook (redis.Hook, go-redis's published
// extension point) on the client that gocron-redis-lock is given. It
// passes every command through unchanged and reads the answers to the
// lock's own requests, which redsync sends through that client:
//
//   - acquire: SET key value PX ms NX (or EX s), answered OK (the key is
//     now the try's) or nil (someone else's);
//   - delete (EVALSHA or EVAL, one key, one argument: the value), answered
//     1 (deleted), 0 (someone else's) or -1 (no key);
//   - touch, the auto-extend's renewal (one key, two arguments: the value
//     and the expiry in ms), answered 1 (renewed) or 0 (not the value's).
//
// A Lock or Unlock call carries a gocronCall in its context (redsync passes
// the caller's context down to go-redis), which records the answers to
// that call's requests. The renewals run on context.Background() in
// gocron-redis-lock's own goroutine: they are matched to a grant by their
// value. Nothing here depends on the scripts' text.
type gocronObserver struct {
	drift float64 // redsync's drift factor, for the validity a renewal sets

	mu   sync.Mutex
	held map[string]*gocronHeld // by value: the grants whose renewals are watched
}

// gocronHeld is a grant whose auto-extend may renew it.
type gocronHeld struct {
	until   time.Time       // the validity its last answered SET or renewal set
	onRenew func(time.Time) // set once the grant is a lease's; called without the observer's lock
}

func newGocronObserver(drift float64) *gocronObserver {
	return &gocronObserver{drift: drift, held: map[string]*gocronHeld{}}
}

// gocronCallKey is the context key of a gocronCall.
type gocronCallKey struct{}

// gocronOutcome is what the server did with one request, as far as its
// answer tells.
type gocronOutcome int

const (
	gocronNone    gocronOutcome = iota // not sent at all
	gocronYes                          // SET answered OK, a script answered 1
	gocronNo                           // SET answered nil, a script answered 0 or -1
	gocronNotSent                      // refused before it could run: a refused dial or an error reply
	gocronUnknown                      // failed after it may have reached the server (a timeout)
)

func (o gocronOutcome) String() string {
	return [...]string{"not sent", "yes", "no", "not run", "unknown"}[o]
}

// gocronCall records what one Lock or Unlock call's requests got: its SET
// and its delete (with a single master, one of each at most).
type gocronCall struct {
	mu       sync.Mutex
	set, del gocronOutcome
	value    string    // the SET's value
	until    time.Time // SET answered OK: the validity it set
}

// settled reports whether a failed Lock call certainly left no key of its
// own: its SET was not sent, refused or answered nil, or the delete
// redsync sends after a failed try answered (after a SET that landed), or
// answered 1 (after a SET that may have landed: it was there, and is gone).
// A delete that found nothing after a SET that timed out settles nothing:
// the SET may still arrive after it.
func (c *gocronCall) settled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.set {
	case gocronNone, gocronNo, gocronNotSent:
		return true
	case gocronYes:
		return c.del == gocronYes || c.del == gocronNo
	}
	return c.del == gocronYes
}

func (c *gocronCall) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("SET: %v, delete: %v", c.set, c.del)
}

// gocronCommand is one of the lock's requests.
type gocronCommand struct {
	kind   gocronKind
	value  string
	expiry time.Duration // SET and touch: the key's new time to live
}

type gocronKind int

const (
	gocronSet gocronKind = iota + 1
	gocronDelete
	gocronTouch
)

// parseGocron recognises the lock's requests by their shape.
func parseGocron(args []any) (gocronCommand, bool) {
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = fmt.Sprint(a)
	}
	switch {
	case len(s) == 6 && strings.EqualFold(s[0], "set") && strings.EqualFold(s[5], "nx"):
		n, err := strconv.ParseInt(s[4], 10, 64)
		if err != nil || n <= 0 {
			return gocronCommand{}, false
		}
		unit := time.Millisecond
		if strings.EqualFold(s[3], "ex") {
			unit = time.Second
		} else if !strings.EqualFold(s[3], "px") {
			return gocronCommand{}, false
		}
		return gocronCommand{kind: gocronSet, value: s[2], expiry: time.Duration(n) * unit}, true
	case (len(s) == 5 || len(s) == 6) && (strings.EqualFold(s[0], "evalsha") || strings.EqualFold(s[0], "eval")) && s[2] == "1":
		if len(s) == 5 {
			return gocronCommand{kind: gocronDelete, value: s[4]}, true
		}
		ms, err := strconv.ParseInt(s[5], 10, 64)
		if err != nil || ms <= 0 {
			return gocronCommand{}, false
		}
		return gocronCommand{kind: gocronTouch, value: s[4], expiry: time.Duration(ms) * time.Millisecond}, true
	}
	return gocronCommand{}, false
}

// gocronAnswer reads a request's answer.
func gocronAnswer(cmd redis.Cmder, err error) gocronOutcome {
	if err != nil && !errors.Is(err, redis.Nil) {
		if lockimpl.NotSent(err) {
			return gocronNotSent
		}
		return gocronUnknown
	}
	switch c := cmd.(type) {
	case *redis.BoolCmd:
		if c.Val() {
			return gocronYes
		}
		return gocronNo
	case *redis.Cmd:
		if n, err := c.Int64(); err == nil && n == 1 {
			return gocronYes
		} else if err == nil {
			return gocronNo
		}
	}
	return gocronUnknown
}

// validity is redsync's: the request's start plus the expiry, less the
// drift (expiry times the drift factor).
func (o *gocronObserver) validity(start time.Time, expiry time.Duration) time.Time {
	return start.Add(expiry - time.Duration(int64(float64(expiry)*o.drift)))
}

func (o *gocronObserver) DialHook(next redis.DialHook) redis.DialHook { return next }

func (o *gocronObserver) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (o *gocronObserver) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c, ok := parseGocron(cmd.Args())
		if !ok {
			return next(ctx, cmd)
		}
		start := time.Now() // redsync reads its own start a few µs earlier, privately
		err := next(ctx, cmd)
		end := time.Now()
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			return err // the EVAL that follows is the request
		}
		out := gocronAnswer(cmd, err)
		if c.kind == gocronTouch {
			o.renewed(c, out, start, end)
			return err
		}
		call, _ := ctx.Value(gocronCallKey{}).(*gocronCall)
		if call == nil {
			return err
		}
		call.mu.Lock()
		if c.kind == gocronSet {
			call.set, call.value = out, c.value
			if out == gocronYes {
				call.until = o.validity(start, c.expiry)
			}
		} else {
			call.del = out
		}
		call.mu.Unlock()
		if c.kind == gocronSet && out == gocronYes {
			o.mu.Lock()
			o.held[c.value] = &gocronHeld{until: call.until}
			o.mu.Unlock()
		}
		return err
	}
}

// renewed handles the answer to a renewal. Redsync counts it only when it
// was answered 1 before the validity it sets had passed (ExtendContext);
// any other answer stops gocron-redis-lock's auto-extend for good, silently,
// so the grant is no longer watched and keeps the validity it had.
func (o *gocronObserver) renewed(c gocronCommand, out gocronOutcome, start, end time.Time) {
	until := o.validity(start, c.expiry)
	o.mu.Lock()
	h := o.held[c.value]
	if h == nil {
		o.mu.Unlock()
		return
	}
	if out != gocronYes || !end.Before(until) {
		delete(o.held, c.value)
		o.mu.Unlock()
		return
	}
	h.until = until
	report := h.onRenew
	o.mu.Unlock()
	if report != nil {
		report(until)
	}
}

// watch attaches a lease's report to its grant and returns the validity
// of the grant's latest SET or renewal; false when the grant is not
// watched (its renewals stopped already, or it was never seen).
func (o *gocronObserver) watch(value string, report func(time.Time)) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.held[value]
	if h == nil {
		return time.Time{}, false
	}
	h.onRenew = report
	return h.until, true
}

// forget stops watching a grant.
func (o *gocronObserver) forget(value string) {
	o.mu.Lock()
	delete(o.held, value)
	o.mu.Unlock()
}

// watched reports how many grants are watched (for tests).
func (o *gocronObserver) watched() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.held)
}
