package scenarios

import (
	"slices"
	"time"
)

// validateLock checks the lock section: a name (the runner checks it is a
// known lock), a TTL, the wait (default: the TTL) and the options.
func (s *Scenario) validateLock() error {
	if s.Lock.Name == "" {
		return s.ErrAt("lock.name", "missing; name a lock (see `simulate list`)")
	}
	if err := s.checkText("lock.name", s.Lock.Name, MaxNameLen); err != nil {
		return err
	}
	if s.Lock.TTL.D() < time.Millisecond {
		return s.ErrAt("lock.ttl", "missing or below 1ms; the lease time, e.g. 2s (allowed: 1ms to %v)", MaxDuration)
	}
	if s.Lock.Wait == 0 {
		s.Lock.Wait = s.Lock.TTL
	}
	if len(s.Lock.Options) > MaxOptions {
		return s.ErrAt("lock.options", "%d options (allowed: at most %d)", len(s.Lock.Options), MaxOptions)
	}
	names := make([]string, 0, len(s.Lock.Options))
	for k := range s.Lock.Options {
		names = append(names, k)
	}
	slices.Sort(names) // the first mistake in a stable order
	for _, k := range names {
		if err := s.checkText("lock.options", k, MaxNameLen); err != nil {
			return err
		}
		if err := s.checkText("lock.options."+k, s.Lock.Options[k], MaxValueLen); err != nil {
			return err
		}
	}
	return nil
}
