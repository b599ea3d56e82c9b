package workercheck

import "time"

// Every wait of a check is bounded by one of these; a worker that makes a
// check wait them out fails it (or, where the protocol allows the worker
// to ignore a command, has it skipped).
const (
	// InitTimeout bounds the answer to init (PROTOCOL.md: 20 s).
	InitTimeout = 20 * time.Second
	// ReplyTimeout bounds the answer to an operation that should not wait
	// for anything (a free lock, a release, a refused line), and to the
	// barrier that follows lines which get no answer.
	ReplyTimeout = 10 * time.Second
	// AtOnceTimeout bounds the answer to a control command sent while an
	// operation blocks.
	AtOnceTimeout = 5 * time.Second
	// CutTimeout bounds the reply of a section whose hold was cut.
	CutTimeout = 5 * time.Second
	// RenewTimeout bounds the wait for a watchdog's renew (Redisson's
	// default lease of 30 s is renewed every 10 s).
	RenewTimeout = 15 * time.Second
	// CrashTimeout bounds the wait for a worker to die after fired crash.
	CrashTimeout = 5 * time.Second
	// StopTimeout bounds the wait for every thread of a worker to be
	// stopped after stopping.
	StopTimeout = 5 * time.Second
	// ExitTimeout bounds the wait for a worker to exit after shutdown.
	ExitTimeout = 5 * time.Second
	// WriteTimeout bounds writing one line to the worker's stdin (a
	// worker that stops reading must not hang the check).
	WriteTimeout = 5 * time.Second
	// KillTimeout bounds the wait for a killed process to be reaped.
	KillTimeout = 10 * time.Second
	// RedisStartTimeout bounds the wait for a redis-server to serve.
	RedisStartTimeout = 10 * time.Second
)

// MaxLines bounds the lines read from one worker process.
const MaxLines = 10000
