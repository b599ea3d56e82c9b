package faults

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/lockfault/lockfault/scenarios"
	"github.com/lockfault/lockfault/worker"
)

// MaxDuration bounds every duration param of every fault, as it bounds
// every other duration of a scenario.
const MaxDuration = scenarios.MaxDuration

// Never is the restart param's word for "not by itself: the heal restarts
// it" (kill, power-loss). A negative duration is refused, not read as never.
const Never = "never"

// ParamClients is the param naming the clients a node fault acts on (a
// client target: c1, c2, ..., holder, others, all).
const ParamClients = "clients"

// ParamError is a param with a value out of its range; Error reads "param
// NAME: what is wrong (allowed: ...)".
type ParamError struct {
	Param string
	Msg   string
}

func (e *ParamError) Error() string { return "param " + e.Param + ": " + e.Msg }

func paramErr(name, format string, args ...any) error {
	return &ParamError{Param: name, Msg: fmt.Sprintf(format, args...)}
}

// durationSpec is the range of one duration param.
type durationSpec struct {
	name     string
	def      time.Duration // its value when absent
	required bool
	min, max time.Duration
	nonZero  bool   // 0 is refused (a step of 0 moves nothing)
	never    bool   // the word never is allowed (read reports it)
	defNever bool   // absent means never
	example  string // e.g. "+11s or -5s"
}

// allowed says the spec's range, for messages.
func (s durationSpec) allowed() string {
	a := fmt.Sprintf("%v to %v", s.min, s.max)
	if s.nonZero {
		a += ", not 0"
	}
	if s.never {
		a += ", or " + Never
	}
	if s.example != "" {
		a += "; e.g. " + s.example
	}
	return a
}

// read returns the param's value (def when absent); never reports the word
// never, where the spec allows it.
func (s durationSpec) read(p Params) (d time.Duration, never bool, err error) {
	v, ok := p[s.name]
	switch {
	case !ok && s.required:
		return 0, false, paramErr(s.name, "missing (allowed: %s)", s.allowed())
	case !ok:
		return s.def, s.defNever, nil
	case s.never && v == Never:
		return 0, true, nil
	}
	d, err = time.ParseDuration(v)
	if err != nil {
		return 0, false, paramErr(s.name, "%q is not a duration (allowed: %s)", v, s.allowed())
	}
	if d < s.min || d > s.max {
		return 0, false, paramErr(s.name, "%v is out of range (allowed: %s)", d, s.allowed())
	}
	if s.nonZero && d == 0 {
		return 0, false, paramErr(s.name, "must not be zero (allowed: %s)", s.allowed())
	}
	return d, false, nil
}

// duration reads a param that cannot be never.
func (s durationSpec) duration(p Params) (time.Duration, error) {
	d, _, err := s.read(p)
	return d, err
}

// restartSpec is the restart param of kill and power-loss: a delay after
// which the node restarts by itself, or never (the heal restarts it);
// absent, it is def, or never if defNever.
func restartSpec(def time.Duration, defNever bool, example string) durationSpec {
	return durationSpec{name: "restart", def: def, defNever: defNever, max: MaxDuration, never: true, example: example}
}

// clientTargetRE is the form of a client target.
var clientTargetRE = regexp.MustCompile(`^(c[1-9][0-9]{0,2}|holder|others|all|trigger)$`)

// clientsParam checks the clients param's form (the runner resolves it).
func clientsParam(p Params) error {
	if v, ok := p[ParamClients]; ok && !clientTargetRE.MatchString(v) {
		return paramErr(ParamClients, "%q is not a client target (allowed: c1, c2, ..., holder, others, all, trigger)", v)
	}
	return nil
}

// ClientTarget splits a client target c<N> into N (0 for holder, others,
// all, trigger and anything else).
func ClientTarget(t string) int {
	if len(t) < 2 || t[0] != 'c' || !clientTargetRE.MatchString(t) {
		return 0
	}
	n, _ := strconv.Atoi(t[1:])
	return n
}

// countParam reads an optional positive count within max.
func countParam(p Params, name string, max int) (int, error) {
	v, ok := p[name]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, paramErr(name, "%q is out of range (allowed: a whole number from 1 to %d)", v, max)
	}
	return n, nil
}

// clientOffset bounds a client clock step: the scenario bound, within the
// worker protocol's.
const clientOffset = min(MaxDuration, worker.MaxOffsetMs*time.Millisecond)

// injectTimer is implemented by faults whose Inject itself takes time by
// their params (a restart delay, a wait for a failover).
type injectTimer interface {
	injectTime(p Params) time.Duration
}

// InjectTime is the longest a fault's injection takes by its params, on top
// of the step's `for`: the restart delay of kill and power-loss, the wait
// of sentinel-failover (its default when absent). It counts toward a run's
// scheduled length. It is 0 for an unknown fault or invalid params (Check
// reports those).
func InjectTime(name string, p Params) time.Duration {
	e, ok := registry[name]
	if !ok {
		return 0
	}
	if t, ok := e.f.(injectTimer); ok && Check(name, p) == nil {
		return t.injectTime(p)
	}
	return 0
}
