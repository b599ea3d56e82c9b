package faults

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// paramCases: for every param of every fault, values it refuses (with the
// message they get) and values it accepts. TestEveryParamIsBounded checks
// that no param is missing here.
var paramCases = []struct {
	fault, param string
	refused      map[string]string // value -> message
	accepted     []string
}{
	{"kill", "restart", map[string]string{
		"1000h": "param restart: 1000h0m0s is out of range (allowed: 0s to 10m0s, or never; e.g. 0s or 10s)",
		"-1s":   "param restart: -1s is out of range (allowed: 0s to 10m0s, or never",
		"soon":  `param restart: "soon" is not a duration`,
	}, []string{"0s", "2200ms", "10m", "never"}},
	{"power-loss", "restart", map[string]string{
		"11m": "param restart: 11m0s is out of range (allowed: 0s to 10m0s, or never",
		"-1s": "param restart: -1s is out of range",
	}, []string{"0s", "10s", "never"}},
	{"latency", "latency", map[string]string{
		"1h":    "param latency: 1h0m0s is out of range (allowed: 1ms to 10m0s; e.g. 200ms)",
		"0s":    "param latency: 0s is out of range (allowed: 1ms to 10m0s",
		"-5ms":  "param latency: -5ms is out of range",
		"500us": "param latency: 500µs is out of range",
	}, []string{"1ms", "350ms", "10m"}},
	{"latency", "jitter", map[string]string{
		"1h":   "param jitter: 1h0m0s is out of range (allowed: 0s to 10m0s",
		"-1ms": "param jitter: -1ms is out of range",
	}, []string{"0ms", "50ms"}},
	{"latency", "clients", map[string]string{
		"c0":     `param clients: "c0" is not a client target (allowed: c1, c2, ..., holder, others, all, trigger)`,
		"nobody": `param clients: "nobody" is not a client target`,
	}, []string{"c1", "c64", "holder", "others", "all"}},
	{"latency", "direction", map[string]string{
		"up": `param direction: "up" is not allowed (allowed: both, to-node, from-node)`,
	}, []string{"both", "to-node", "from-node"}},
	{"partition-client", "clients", map[string]string{
		"c1,c2": `param clients: "c1,c2" is not a client target`,
	}, []string{"c2", "holder"}},
	{"partition-client", "mode", map[string]string{
		"cut": `param mode: "cut" is not allowed (allowed: reset, drop)`,
	}, []string{"reset", "drop"}},
	{"partition-client", "direction", map[string]string{
		"sideways": `param direction: "sideways" is not allowed`,
	}, []string{"both"}},
	{"partition-peer", "mode", map[string]string{
		"x": `param mode: "x" is not allowed (allowed: reset, drop)`,
	}, []string{"drop"}},
	{"sentinel-failover", "within", map[string]string{
		"1h":  "param within: 1h0m0s is out of range (allowed: 1ms to 10m0s; e.g. 20s)",
		"0s":  "param within: 0s is out of range (allowed: 1ms to 10m0s",
		"-1s": "param within: -1s is out of range",
	}, []string{"20s", "10m"}},
	{"cluster-failover", "how", map[string]string{
		"cut": `param how: "cut" is not allowed (allowed: kill, pause)`,
	}, []string{"kill", "pause"}},
	{"cluster-failover", "within", map[string]string{
		"1h": "param within: 1h0m0s is out of range (allowed: 1ms to 10m0s; e.g. 10s)",
		"0s": "param within: 0s is out of range (allowed: 1ms to 10m0s",
	}, []string{"10s", "10m"}},
	{"cluster-manual-failover", "mode", map[string]string{
		"soft": `param mode: "soft" is not allowed`,
	}, []string{"default", "force", "takeover"}},
	{"cluster-manual-failover", "within", map[string]string{
		"1h": "param within: 1h0m0s is out of range (allowed: 1ms to 10m0s; e.g. 10s)",
	}, []string{"10s"}},
	{"cluster-migrate-slot", "step", map[string]string{
		"half": `param step: "half" is not allowed (allowed: begin, move, finish, all)`,
	}, []string{"begin", "move", "finish", "all"}},
	{"cluster-migrate-slot", "to", map[string]string{
		"x1": `param to: "x1" is not a node name (allowed: n1, n2, ...)`,
		"n":  `param to: "n" is not a node name`,
	}, []string{"n1", "n21"}},
	{"cluster-migrate-slot", "within", map[string]string{
		"1h": "param within: 1h0m0s is out of range (allowed: 1ms to 10m0s; e.g. 10s)",
	}, []string{"10s"}},
	{"cluster-minority-partition", "clients", map[string]string{
		"c1,c2": `param clients: "c1,c2" is not a client target`,
	}, []string{"c1", "holder", "others"}},
	{"cluster-minority-partition", "within", map[string]string{
		"1h": "param within: 1h0m0s is out of range (allowed: 1ms to 10m0s; e.g. 5s)",
		"0s": "param within: 0s is out of range",
	}, []string{"5s", "10m"}},
	{"clock-jump", "by", map[string]string{
		"1h":   "param by: 1h0m0s is out of range (allowed: -10m0s to 10m0s, not 0; e.g. +11s or -5s)",
		"-11m": "param by: -11m0s is out of range",
		"0s":   "param by: must not be zero (allowed: -10m0s to 10m0s, not 0",
	}, []string{"+11s", "-5s", "10m"}},
	{"clock-drift", "rate", map[string]string{
		"1h":  "param rate: 1h0m0s is out of range (allowed: -999ms to 10m0s, not 0",
		"-1s": "param rate: -1s is out of range",
		"0s":  "param rate: must not be zero",
	}, []string{"1s", "200ms", "-500ms"}},
	{"clock-client", "by", map[string]string{
		"9000h": "param by: 9000h0m0s is out of range (allowed: -10m0s to 10m0s, not 0; e.g. -2s)",
		"0s":    "param by: must not be zero",
	}, []string{"-1s", "+10m"}},
	{"clock-client", "every", map[string]string{
		"1h":  "param every: 1h0m0s is out of range (allowed: 10ms to 10m0s",
		"5ms": "param every: 5ms is out of range (allowed: 10ms to 10m0s",
	}, []string{"10ms", "10m"}},
	{"failpoint", "name", map[string]string{
		"": "param name: missing; which failpoint (allowed: after-setnx",
	}, []string{"after-setnx", "my-own-point"}},
	{"failpoint", "action", map[string]string{
		"explode": `param action: "explode" is not allowed (allowed: crash, sleep, stop)`,
	}, []string{"crash", "sleep", "stop"}},
	{"failpoint", "ms", map[string]string{
		"1h":                   `param ms: "1h" is out of range (allowed: 0ms to 10m0s)`,
		"3600000":              `param ms: "3600000" is out of range (allowed: 0ms to 10m0s)`,
		"99999999999999999999": `param ms: "99999999999999999999" is neither a duration nor a number of milliseconds`,
		"-1":                   `param ms: "-1" is out of range`,
		"-1ms":                 `param ms: "-1ms" is out of range`,
		"soon":                 `param ms: "soon" is neither a duration nor a number of milliseconds (allowed: 0ms to 10m0s)`,
	}, []string{"0", "1300", "1250ms", "600000", "10m"}},
	{"failpoint", "count", map[string]string{
		"0":       `param count: "0" is out of range (allowed: a whole number from 1 to 1000000)`,
		"1000001": `param count: "1000001" is out of range`,
		"two":     `param count: "two" is out of range`,
	}, []string{"1", "2", "1000000"}},
	{"manual-unlock", "key", map[string]string{
		"": "param key: empty (allowed: a Redis key, or leave key out",
	}, []string{"lock:order", "x"}},
}

// base params a fault needs besides the one under test.
func baseParams(fault string) Params {
	switch fault {
	case "clock-jump", "clock-client":
		return Params{"by": "1s"}
	case "clock-drift":
		return Params{"rate": "100ms"}
	case "latency":
		return Params{"latency": "10ms"}
	case "failpoint":
		return Params{"name": "after-setnx", "action": "stop"}
	case "partition-client", "partition-peer":
		return Params{"mode": "drop"}
	}
	return Params{}
}

// Every param of every fault is bounded: out of its range it is refused by
// Check, before anything starts, with a *ParamError naming it and the range
// in the message; within it, accepted. (Before: restart=1000h, latency=1h,
// within=1h, every=1h, ms=1h were accepted, and restart=-1s silently meant
// never for kill and "at once" for power-loss.)
func TestEveryParamIsBounded(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range paramCases {
		covered[c.fault+"."+c.param] = true
		for v, want := range c.refused {
			p := baseParams(c.fault)
			p[c.param] = v
			err := Check(c.fault, p)
			var pe *ParamError
			if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &pe) || pe.Param != c.param {
				t.Errorf("%s %s=%q: got %v, want a ParamError for %s containing %q", c.fault, c.param, v, err, c.param, want)
			}
		}
		for _, v := range c.accepted {
			p := baseParams(c.fault)
			p[c.param] = v
			if err := Check(c.fault, p); err != nil {
				t.Errorf("%s %s=%q: refused: %v", c.fault, c.param, v, err)
			}
		}
	}
	for _, info := range All() {
		for _, p := range info.Params {
			if !covered[info.Name+"."+p] {
				t.Errorf("fault %s param %s has no bound test in paramCases", info.Name, p)
			}
		}
		if err := Check(info.Name, baseParams(info.Name)); err != nil {
			t.Errorf("%s with its base params: %v", info.Name, err)
		}
	}
}

// What an injection takes by its params counts toward the run's length.
func TestInjectTime(t *testing.T) {
	cases := []struct {
		fault string
		p     Params
		want  time.Duration
	}{
		{"kill", Params{"restart": "2200ms"}, 2200 * time.Millisecond},
		{"kill", nil, 0},                        // the heal restarts it
		{"kill", Params{"restart": "never"}, 0}, // the same, said
		{"kill", Params{"restart": "1000h"}, 0}, // refused by Check
		{"power-loss", Params{"restart": "10m"}, 10 * time.Minute},
		{"power-loss", Params{"restart": "never"}, 0},
		{"sentinel-failover", nil, 30 * time.Second},
		{"sentinel-failover", Params{"within": "20s"}, 20 * time.Second},
		{"latency", Params{"latency": "10m"}, 0}, // for the step's `for`, not the injection
		{"teleport", nil, 0},
	}
	for _, c := range cases {
		if got := InjectTime(c.fault, c.p); got != c.want {
			t.Errorf("InjectTime(%s, %v) = %v, want %v", c.fault, c.p, got, c.want)
		}
	}
}

func TestClientTarget(t *testing.T) {
	for in, want := range map[string]int{"c1": 1, "c64": 64, "c0": 0, "holder": 0, "c": 0, "cx": 0, "c01": 0} {
		if got := ClientTarget(in); got != want {
			t.Errorf("ClientTarget(%q) = %d, want %d", in, got, want)
		}
	}
}
