package resp

import (
	"context"
	"errors"
	"time"
)

// hold runs the OnFire of each trigger that fired on a message and blocks
// until they all returned, the shortest hold limit passed, or the tap
// closed; then the message goes on, unless a trigger's Drop says it must
// not (drop). Each trigger gets its Release.
func (c *conn) hold(f Fire, hs []*Armed) (drop bool) {
	limit := hs[0].t.HoldLimit
	for _, a := range hs[1:] {
		limit = min(limit, a.t.HoldLimit)
	}
	ctx, cancel := context.WithTimeout(c.tap.ctx, limit)
	defer cancel()
	f.At = time.Now()
	done := make(chan struct{}, len(hs))
	for _, a := range hs {
		g := f
		g.Nth = a.t.Nth
		c.tap.wg.Add(1)
		go func() {
			defer c.tap.wg.Done()
			a.t.OnFire(ctx, g)
			done <- struct{}{}
		}()
	}
wait:
	for range hs {
		select {
		case <-done:
		case <-ctx.Done():
			break wait
		}
	}
	// Whether OnFire returned or not, the context says why the hold ended
	// (a callback returns as soon as its context is done).
	closed := c.tap.ctx.Err() != nil
	expired := !closed && errors.Is(ctx.Err(), context.DeadlineExceeded)
	if expired {
		c.note(NoteHoldExpired, f.Phase.String()+" "+f.Command.String()+": OnFire did not return within "+limit.String())
	}
	now := time.Now()
	for _, a := range hs {
		g := f
		g.Nth = a.t.Nth
		a.release(Release{Fire: g, ReleasedAt: now, Expired: expired, Closed: closed})
		drop = drop || (f.Phase == AtRequest && a.t.Drop != nil && a.t.Drop())
	}
	if drop {
		c.note(NoteDropped, f.Command.String()+": dropped after its hold (the client is gone)")
	}
	return drop
}
