// Package worker is the lock client. Each worker is its own OS process that
// runs one lock implementation and obeys the harness over line-delimited JSON
// on stdin (commands) and stdout (replies and events). docs/PROTOCOL.md is the
// specification; this file is its Go form.
package worker

import (
	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/lockimpl"
)

// Command is one line from the harness.
type Command struct {
	Cmd string `json:"cmd"` // init, acquire, cs, release, extend, round, failpoint, clock, cut, endpoints, shutdown
	Op  int64  `json:"op,omitempty"`

	// init
	Client    string             `json:"client,omitempty"`
	Lock      string             `json:"lock,omitempty"`
	Options   map[string]string  `json:"options,omitempty"`
	Endpoints lockimpl.Endpoints `json:"endpoints,omitzero"`
	Resource  string             `json:"resource,omitempty"` // address of the protected resource

	// acquire
	Key    string `json:"key,omitempty"` // resource name the lock guards
	TTLMs  int64  `json:"ttl_ms,omitempty"`
	WaitMs int64  `json:"wait_ms,omitempty"`

	// acquire (the name to give the grant), cs, release, extend
	Lease  string `json:"lease,omitempty"`
	HoldMs int64  `json:"hold_ms,omitempty"`
	// cs: write only if the lease's validity has this long left (0: always)
	WriteIfValidMs int64 `json:"write_if_valid_ms,omitempty"`

	// round: acquire (op), then cs (op_cs) and release (op_release) in the
	// worker, each step announced and answered with its own op id and time
	OpCS      int64 `json:"op_cs,omitempty"`
	OpRelease int64 `json:"op_release,omitempty"`

	// failpoint
	Name   string `json:"name,omitempty"`
	Action string `json:"action,omitempty"` // crash, sleep, stop, off
	Count  int    `json:"count,omitempty"`  // trigger on the Count-th hit (default 1)
	Ms     int64  `json:"ms,omitempty"`     // sleep/stop duration

	// clock
	OffsetMs int64 `json:"offset_ms,omitempty"`
}

// Message is one line from the worker.
type Message struct {
	Type   string `json:"type"` // ready, reply, renew, stopping, error
	Op     int64  `json:"op,omitempty"`
	Status string `json:"status,omitempty"` // ok, fail, info
	Error  string `json:"error,omitempty"`

	Lease      string `json:"lease,omitempty"`
	Token      string `json:"token,omitempty"`
	Fence      int64  `json:"fence,omitempty"`
	ValidityMs int64  `json:"validity_ms,omitempty"`
	ValidUntil int64  `json:"valid_until,omitempty"` // CLOCK_MONOTONIC ns

	Read     *int64 `json:"read,omitempty"`
	Wrote    *int64 `json:"wrote,omitempty"`
	Rejected bool   `json:"rejected,omitempty"`

	// T: a round step's time on CLOCK_MONOTONIC in ns: when an `invoke`
	// began it, or when a `reply` completed it.
	T int64 `json:"t,omitempty"`

	Line int    `json:"line,omitempty"` // error: the offending command line number
	Name string `json:"name,omitempty"` // stopping, fired: the failpoint
	// fired: the failpoint's action (crash, sleep, stop)
	Action string `json:"action,omitempty"`
	Ms     int64  `json:"ms,omitempty"`  // stopping: how long the harness should keep it stopped
	Pid    int    `json:"pid,omitempty"` // ready

	// ready: what the worker's lock is (an external worker names and
	// describes its own lock; the harness picks topology and properties
	// from it).
	Lock       string          `json:"lock,omitempty"`
	Needs      lockfault.Needs `json:"needs,omitempty"`      // single, masters, etcd, cluster
	Caps       []string        `json:"caps,omitempty"`       // lockimpl.Cap* names
	Failpoints []string        `json:"failpoints,omitempty"` // failpoint names the lock can hit
	// Options are the lock option names the worker understands (init's
	// options are checked against them before anything starts).
	Options []string `json:"options,omitempty"`
	// Version is the exact version of the lock's code (a library's module
	// or package version), recorded on cards and keyed on by baselines.
	Version string `json:"version,omitempty"`

	// clock: the offset the worker was asked for (offset_ms, as in the
	// command) and the wall time its lock reads right after moving its
	// clock, in Unix ms: the harness checks it against its own clock.
	OffsetMs int64 `json:"offset_ms,omitempty"`
	WallMs   int64 `json:"wall_ms,omitempty"`

	// Code classifies an error reply or message: "not-supported" (the
	// worker cannot do this command, failpoint or option: definite),
	// "malformed" (the line was not a valid command: definite).
	Code string `json:"code,omitempty"`
}

// Message types beyond ready/reply/renew/stopping/error.
const (
	// TypeFired: an armed failpoint triggered (sent before its action, so a
	// crash still reports it). Name and Action say which.
	TypeFired = "fired"
	// TypeInvoke: a round step (cs, release) begins now (T); its reply
	// follows.
	TypeInvoke = "invoke"
	// TypeClock answers a `clock` command: OffsetMs as asked, and WallMs,
	// the wall time the lock reads right after the step.
	TypeClock = "clock"
)

// Error codes (Message.Code).
const (
	CodeNotSupported = "not-supported"
	CodeMalformed    = "malformed"
)

// Status values.
const (
	StatusOK   = "ok"
	StatusFail = "fail"
	StatusInfo = "info"
)

// EnvRole is set to "worker" in a worker's environment; a binary that sees
// it runs Main instead of its normal entry point.
const EnvRole = "LOCKFAULT_ROLE"
