package runner

import "sync"

// events is what the nemesis's await steps wait for: workload events
// (grant, read, write, renew) signalled by the client driver and the
// resource, each possibly of one client only.
type events struct {
	mu      sync.Mutex
	waiters map[string][]waiter
}

// waiter is a nemesis step waiting for an event (of one client, if by is
// set; only once after is closed, if after is set).
type waiter struct {
	by    string
	ch    chan struct{}
	after <-chan struct{}
}

// signal wakes everyone awaiting an event kind from this process.
func (ev *events) signal(kind, process string) {
	ev.mu.Lock()
	if len(ev.waiters[kind]) == 0 {
		ev.mu.Unlock()
		return
	}
	var keep, wake []waiter
	for _, w := range ev.waiters[kind] {
		armed := true
		if w.after != nil {
			select {
			case <-w.after:
			default:
				armed = false // its predecessor's event has not come yet
			}
		}
		if armed && (w.by == "" || w.by == process) {
			wake = append(wake, w)
		} else {
			keep = append(keep, w)
		}
	}
	ev.waiters[kind] = keep
	ev.mu.Unlock()
	for _, w := range wake {
		close(w.ch)
	}
}

// await returns a channel closed at the next event of a kind (by one
// client, when by is set) that comes after after is closed (if not nil).
func (ev *events) await(kind, by string, after <-chan struct{}) <-chan struct{} {
	ch := make(chan struct{})
	ev.mu.Lock()
	if ev.waiters == nil {
		ev.waiters = map[string][]waiter{}
	}
	ev.waiters[kind] = append(ev.waiters[kind], waiter{by, ch, after})
	ev.mu.Unlock()
	return ch
}
