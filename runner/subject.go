package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockfault/lockfault/lockimpl"
)

// Subject is the lock under test, resolved and validated once and passed as
// one value from the command line to the workers: a lock registered in this
// binary (run by lockfault's own worker, this executable), or the lock an
// external worker command declared in its ready.
type Subject struct {
	// Info is the lock as registered, or as the worker declared it.
	Info lockimpl.Info
	// Command starts the worker; nil means this executable's built-in
	// worker (which must call worker.Main when worker.IsWorker()).
	Command []string
	// Shipped: a lock lockfault ships (registered in this binary or served
	// by lockfault-ext), which the suite's promise table covers.
	Shipped bool
}

// Name is the lock's name.
func (s Subject) Name() string { return s.Info.Name }

// External reports whether an external worker command runs the lock.
func (s Subject) External() bool { return len(s.Command) > 0 }

// Worker is the worker command as one line ("" for the built-in worker).
func (s Subject) Worker() string { return JoinCommand(s.Command) }

// String names the subject in messages: "lock single" or
// "lock redis-py (worker /usr/bin/python3 worker.py)".
func (s Subject) String() string {
	if s.External() {
		return fmt.Sprintf("lock %s (worker %s)", s.Info.Name, s.Worker())
	}
	return "lock " + s.Info.Name
}

// BuiltIn is a lock registered in this binary, or, when this binary does not
// have it, one of the published libraries' locks that the lockfault-ext
// worker binary serves (see ExtWorker).
func BuiltIn(ctx context.Context, name string) (Subject, error) {
	if info, ok := lockimpl.Lookup(name); ok {
		return Subject{Info: info, Shipped: true}, nil
	}
	if s, ok, err := extSubject(ctx, name); ok || err != nil {
		return s, err
	}
	return Subject{}, fmt.Errorf("unknown lock %q (known: %s)", name, strings.Join(KnownLocks(ctx), ", "))
}

// External starts a worker command, asks it which lock it runs (lock may
// be empty: the worker then names its own) and returns it as a subject.
func External(ctx context.Context, command []string, lock string) (Subject, error) {
	if len(command) == 0 {
		return Subject{}, fmt.Errorf("-worker: empty command")
	}
	info, err := Describe(ctx, command, lock)
	if err != nil {
		return Subject{}, err
	}
	return Subject{Info: info, Command: command}, nil
}

// Resolve turns the command line's -lock and -worker into a subject: a
// worker command line (split like a shell would, no shell runs it) with an
// optional lock name, or a built-in lock. Both empty is an error the caller
// words (a run may fall back to the scenario's own lock instead).
func Resolve(ctx context.Context, lock, workerLine string) (Subject, error) {
	if workerLine != "" {
		argv, err := SplitCommand(workerLine)
		if err != nil {
			return Subject{}, fmt.Errorf("-worker: %v", err)
		}
		s, err := External(ctx, argv, lock)
		if err != nil {
			return Subject{}, fmt.Errorf("-worker: %v", err)
		}
		return s, nil
	}
	if lock == "" {
		return Subject{}, fmt.Errorf("-lock: missing (locks: %s), or give -worker", strings.Join(KnownLocks(ctx), ", "))
	}
	s, err := BuiltIn(ctx, lock)
	if err != nil {
		return Subject{}, fmt.Errorf("-lock: %v", err)
	}
	return s, nil
}

// KnownLocks lists the locks BuiltIn resolves: this binary's and the
// lockfault-ext binary's, sorted.
func KnownLocks(ctx context.Context) []string {
	names := lockimpl.Names()
	for _, i := range extInfos(ctx) {
		names = append(names, i.Name)
	}
	return sortedUnique(names)
}
