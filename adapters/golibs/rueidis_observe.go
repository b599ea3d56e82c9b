package golibs

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// rueidisObserver wraps the rueidis.Client that a rueidislock Locker uses
// (LockerOption.ClientBuilder, the library's published hook) and watches
// the answers to the lock's own scripts, which it passes through
// unchanged. Every rueidislock script is called with one key
// ("<prefix>:<i>:<name>") and two arguments, the try's random value and a
// deadline in Unix milliseconds, the key's expiry:
//
//   - acquire (SET NX PXAT deadline) answers "OK" (the key is now the
//     try's until the deadline) or nil (someone else's);
//   - extend (compare and PEXPIREAT) answers 1 or 0 (not the try's). The
//     renewal timer sends a new deadline, now + KeyValidity; a client-side
//     caching invalidation re-sends the key's current deadline to check it;
//   - delete (compare and DEL) answers 1 or 0, with the key's latest
//     deadline: after the lock's context ends, or after a renewal failed
//     (with the deadline that renewal sent).
//
// So a deadline never sent before for the key that is answered 1 is a
// renewal; an integer answer for a deadline whose renewal failed is the
// delete that follows it; 0 or nil means the key is not the try's. Nothing
// here depends on the scripts' text.
type rueidisObserver struct {
	rueidis.Client
	prefix string

	mu      sync.Mutex
	tries   map[string]*rueidisTry // by the try's random value
	attempt map[string]string      // lock name -> the value of the try under way ("" before its first request)
	active  map[string]bool        // lock names with a try under way
}

// rueidisTry is what one rueidislock try did to its keys.
type rueidisTry struct {
	keys     map[string]*rueidisKey
	onChange func() // set once the try is a lease's; called without the observer's lock held
}

// rueidisKey is one of a try's keys, as its answers tell.
type rueidisKey struct {
	ours     bool      // it may hold the try's value
	certain  bool      // the last answer (or refused connection) said for sure whether it does
	deadline int64     // the expiry it is known to have, Unix ms (acquire or renewal answered)
	until    time.Time // that expiry on the monotonic clock, from the clock read before the request
	failed   []int64   // deadlines of renewals that were not answered 1
	// lastOne: the last answer was 1 to an old deadline. While the lease
	// lives that is a check (still the try's); once its context ended
	// and the monitors are done it is the delete of the try's key.
	lastOne bool
}

func newRueidisObserver(c rueidis.Client, prefix string) *rueidisObserver {
	return &rueidisObserver{Client: c, prefix: prefix + ":",
		tries: map[string]*rueidisTry{}, attempt: map[string]string{}, active: map[string]bool{}}
}

// rueidisCall is a lock script's request.
type rueidisCall struct {
	key, name, val string
	deadline       int64
}

// parse recognises a rueidislock script request on one of its keys.
func (o *rueidisObserver) parse(args []string) (rueidisCall, bool) {
	if len(args) != 6 || (args[0] != "EVALSHA" && args[0] != "EVAL") || args[2] != "1" {
		return rueidisCall{}, false
	}
	rest, ok := strings.CutPrefix(args[3], o.prefix)
	if !ok {
		return rueidisCall{}, false
	}
	_, name, ok := strings.Cut(rest, ":")
	d, err := strconv.ParseInt(args[5], 10, 64)
	if !ok || err != nil {
		return rueidisCall{}, false
	}
	return rueidisCall{key: args[3], name: name, val: args[4], deadline: d}, true
}

// Do passes the command on and observes a lock script's answer. The
// command is recycled by Do, so its words are read first.
func (o *rueidisObserver) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	call, ok := o.parse(cmd.Commands())
	start := time.Now()
	resp := o.Client.Do(ctx, cmd)
	if ok {
		o.observe(call, start, resp)
	}
	return resp
}

// begin marks a try of the named lock as under way; end closes it and
// returns its value.
func (o *rueidisObserver) begin(name string) {
	o.mu.Lock()
	o.active[name], o.attempt[name] = true, ""
	o.mu.Unlock()
}

func (o *rueidisObserver) end(name string) (val string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	val = o.attempt[name]
	delete(o.active, name)
	delete(o.attempt, name)
	return val
}

func (o *rueidisObserver) observe(c rueidisCall, start time.Time, resp rueidis.RedisResult) {
	err := resp.Error()
	if re, ok := rueidis.IsRedisErr(err); ok && re.IsNoScript() {
		return // the script is sent again in full
	}
	o.mu.Lock()
	t := o.tries[c.val]
	if t == nil {
		// Only the try under way (its first request) is new.
		if !o.active[c.name] || o.attempt[c.name] != "" {
			o.mu.Unlock()
			return
		}
		t = &rueidisTry{keys: map[string]*rueidisKey{}}
		o.tries[c.val], o.attempt[c.name] = t, c.val
	}
	k := t.keys[c.key]
	if k == nil {
		k = &rueidisKey{}
		t.keys[c.key] = k
	}
	msg, _ := resp.ToMessage()
	str, _ := msg.ToString()
	n, intErr := msg.ToInt64()
	one := err == nil && intErr == nil && n == 1
	k.lastOne = false
	switch {
	case err == nil && str == "OK": // acquired
		k.ours, k.certain, k.deadline = true, true, c.deadline
		k.until = start.Add(time.UnixMilli(c.deadline).Sub(start))
	case rueidis.IsRedisNil(err) || (err == nil && intErr == nil && n == 0): // someone else's
		k.ours, k.certain = false, true
	case one && slices.Contains(k.failed, c.deadline): // the delete after a failed renewal
		k.ours, k.certain, k.lastOne = false, true, true
	case one && c.deadline > k.deadline: // a renewal
		k.ours, k.certain, k.deadline = true, true, c.deadline
		k.until = start.Add(time.UnixMilli(c.deadline).Sub(start))
	case one: // a check of the current deadline, or the delete once the lease is over
		k.lastOne = true
	default: // no answer: the request may or may not have run
		if c.deadline != k.deadline && !slices.Contains(k.failed, c.deadline) {
			k.failed = append(k.failed, c.deadline)
		}
		if !rueidisNotSent(err) {
			k.ours, k.certain = true, false
		}
	}
	notify := t.onChange
	o.mu.Unlock()
	if notify != nil {
		notify()
	}
}

// rueidisNotSent reports whether a failed request certainly never reached
// the server (the connection was refused).
func rueidisNotSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// holds reports whether a finished try's key may still hold its value
// (its monitor is done, so an answer of 1 to an old deadline was the
// delete), and whether that is unknown rather than certain.
func (k *rueidisKey) holds() (may, unknown bool) {
	may = k.ours && !k.lastOne
	return may, may && !k.certain
}

// settled reports whether none of a finished try's keys can hold its
// value.
func (o *rueidisObserver) settled(val string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.tries[val]
	if t == nil {
		return true // nothing it sent was answered or may have run
	}
	for _, k := range t.keys {
		if may, _ := k.holds(); may {
			return false
		}
	}
	return true
}

// forget drops a finished try.
func (o *rueidisObserver) forget(val string) {
	o.mu.Lock()
	delete(o.tries, val)
	o.mu.Unlock()
}

// validUntil is the end of a try's grant as its answers tell: the
// majority-th latest known expiry among the keys that are its own, or
// false when fewer than majority keys are.
func (o *rueidisObserver) validUntil(val string, majority int) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.tries[val]
	if t == nil {
		return time.Time{}, false
	}
	var ends []time.Time
	for _, k := range t.keys {
		if k.ours && k.certain && k.deadline > 0 {
			ends = append(ends, k.until)
		}
	}
	if len(ends) < majority {
		return time.Time{}, false
	}
	slices.SortFunc(ends, func(a, b time.Time) int { return b.Compare(a) })
	return ends[majority-1], true
}

// deleted counts a finished try's keys whose last answer was the delete
// of its own value, and says whether some key may still hold it without
// an answer saying so.
func (o *rueidisObserver) deleted(val string) (n int, unknown bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.tries[val]
	if t == nil {
		return 0, false
	}
	for _, k := range t.keys {
		if k.lastOne {
			n++
		}
		if _, u := k.holds(); u {
			unknown = true
		}
	}
	return n, unknown
}

// watch sets the function called after each answer about the try's keys.
func (o *rueidisObserver) watch(val string, f func()) {
	o.mu.Lock()
	if t := o.tries[val]; t != nil {
		t.onChange = f
	}
	o.mu.Unlock()
}
