package scenarios

import "time"

// ScheduledTime is the longest the nemesis can take by its schedule: the
// warmup, then per cycle every sleep, fault duration, injection time (a
// kill's or power-loss's restart delay, a sentinel-failover's wait: see
// FaultRegistry) and await timeout plus the cooldown (a random nemesis:
// per_cycle times 1.5 intervals plus `for` plus the longest injection time
// of its faults).
func (s *Scenario) ScheduledTime() time.Duration {
	n := s.Nemesis
	var cycle time.Duration
	for _, st := range n.Steps {
		cycle += st.Sleep.D() + st.For.D()
		if st.Fault != "" {
			cycle += injectTime(st.Fault, st.Params)
		}
		if st.Await != "" {
			w := st.Within.D()
			if w == 0 {
				w = 30 * time.Second
			}
			cycle += w
		}
	}
	if r := n.Random; r != nil {
		k := r.PerCycle
		if k <= 0 {
			k = 3
		}
		var inject time.Duration
		for _, f := range r.Faults {
			inject = max(inject, injectTime(f, nil))
		}
		cycle += time.Duration(k) * (r.Interval.D()*3/2 + r.For.D() + inject)
	}
	cycle += n.Cooldown.D()
	cycles := n.Cycles
	if cycles < 1 {
		cycles = 1
	}
	return n.Warmup.D() + time.Duration(cycles)*cycle
}

// Schedule lists the steps of one cycle as text.
func (s *Scenario) Schedule() []string {
	var out []string
	for _, st := range s.Nemesis.Steps {
		out = append(out, st.String())
	}
	return out
}
