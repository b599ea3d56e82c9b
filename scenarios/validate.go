package scenarios

import (
	"time"
)

// Bounds on every count and duration of a scenario (and of the command
// line's overrides): a value outside them is refused before anything starts,
// with the bound in the message. Bounds on its text are in text.go.
const (
	MaxClients = 64
	// Topology sizes are bounded so that an interrupted start-up, with
	// everything removed, fits in 2 s on a loaded 2-core host with Docker.
	MaxReplicas  = 2
	MaxSentinels = 3
	MaxMasters   = 7
	// A cluster: 3 to 7 masters sharing the slots, 0 to 2 replicas each,
	// a node timeout of 100ms to 1m.
	MinClusterMasters  = 3
	MaxClusterReplicas = 2
	MinNodeTimeout     = 100 * time.Millisecond
	MaxNodeTimeout     = time.Minute
	MaxCycles          = 1000
	MaxSteps           = 100 // steps of one cycle
	MaxPerCycle        = 20  // faults per cycle of a random nemesis
	MaxReentry         = 16
	// MaxDuration bounds every single duration (ttl, wait, hold, think,
	// sleep, for, within, warmup, cooldown, interval, stuck_after, ...),
	// the duration params of faults included (restart, latency, within...).
	MaxDuration = 10 * time.Minute
	// maxStartSpread bounds how long after c1 the last client starts.
	maxStartSpread = time.Minute
	// MaxRunTime bounds the scheduled length of a whole run: warmup plus
	// every cycle's sleeps, fault durations, injection times, await
	// timeouts and cooldown.
	MaxRunTime = 24 * time.Hour
	// MaxFileSize bounds a scenario file.
	MaxFileSize = 1 << 20
	// MaxPasswordLen bounds topology.password.
	MaxPasswordLen = 128
)

// Validate checks the scenario's structure and bounds and fills defaults,
// section by section (each in its own file). Fault names and params are
// checked against the faults registry; lock names are checked by the
// runner against its registry (through ErrAt), since this package does not
// know the locks.
func (s *Scenario) Validate() error {
	for _, check := range []func() error{
		s.validateName,
		s.validateTopology,
		s.validateLock,
		s.validateWorkload,
		s.validateNemesis,
		s.validateExpectations,
		s.validateEvidence,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// lineOf is the line of a field path (a variant's own first), 0 if absent.
func (s *Scenario) lineOf(path string) int {
	if l, ok := s.line[s.prefix+path]; ok && s.prefix != "" {
		return l
	}
	return s.line[path]
}

// ErrAt formats an error naming the file, the line of a field (given as a
// dotted path such as "lock.name" or "nemesis.steps.2.fault") and the field.
func (s *Scenario) ErrAt(path, format string, args ...any) error {
	return s.errAt(path, format, args...)
}
