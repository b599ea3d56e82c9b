// Package golock is a small Redis lock, as a user of lockfault would have
// in their own module: SET key token NX PX to acquire, a compare-and-delete
// script to release, a compare-and-pexpire script to extend. Its test
// (golock_test.go) runs lockfault's property suite against it with
// lockfaulttest; brokenlock is a copy with one deliberate bug that the
// suite catches.
package golock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrTaken: another client holds the lock.
var ErrTaken = errors.New("golock: taken")

// ErrLost: the lock is no longer ours (expired, or someone else's now).
var ErrLost = errors.New("golock: lost")

var (
	release = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)
	extend  = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`)
)

// Locker hands out locks on one Redis server.
type Locker struct {
	rdb *redis.Client
	// Now is the clock validity is measured with (time.Now by default).
	Now func() time.Time
}

// New connects to the Redis server at addr.
func New(addr string) *Locker {
	return &Locker{rdb: redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1}), Now: time.Now}
}

// Lock is one grant.
type Lock struct {
	Key        string
	Token      string
	ValidUntil time.Time
}

// Obtain tries to take key for ttl, retrying until wait runs out.
func (l *Locker) Obtain(ctx context.Context, key string, ttl, wait time.Duration) (*Lock, error) {
	var b [16]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	deadline := time.Now().Add(wait)
	for {
		start := l.Now()
		ok, err := l.rdb.SetNX(ctx, "golock:"+key, token, ttl).Result()
		if err != nil {
			return nil, err
		}
		if ok {
			return &Lock{Key: key, Token: token, ValidUntil: start.Add(ttl)}, nil
		}
		if !time.Now().Before(deadline) {
			return nil, ErrTaken
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Release frees the lock if it is still ours.
func (l *Locker) Release(ctx context.Context, lk *Lock) error {
	n, err := release.Run(ctx, l.rdb, []string{"golock:" + lk.Key}, lk.Token).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrLost
	}
	return nil
}

// Extend moves the lock's expiry to ttl from now if it is still ours.
func (l *Locker) Extend(ctx context.Context, lk *Lock, ttl time.Duration) error {
	start := l.Now()
	n, err := extend.Run(ctx, l.rdb, []string{"golock:" + lk.Key}, lk.Token, ttl.Milliseconds()).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrLost
	}
	lk.ValidUntil = start.Add(ttl)
	return nil
}

// Close closes the connection.
func (l *Locker) Close() error { return l.rdb.Close() }
