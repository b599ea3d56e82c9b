package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/lockfault/lockfault/cluster"
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
	// Options are lock options the subject sets in every scenario it runs
	// (over the scenario's own), such as a safety option turned on:
	// "redisson+wait-replicas=1" is redisson with wait-replicas=1. They are
	// part of its identity: Label names them.
	Options map[string]string
}

// Label names the subject as cards, reports and baselines do: the lock's
// name, then "+option=value" for each of its options, sorted.
func (s Subject) Label() string {
	l := s.Info.Name
	for _, k := range sortedKeys(s.Options) {
		l += "+" + k + "=" + s.Options[k]
	}
	return l
}

// maxOptionLen bounds an option's name and value given in a subject's label.
const maxOptionLen = 64

// withOptions parses the "+option=value" suffixes of a label onto a
// subject: each option one the lock declares, each value short and
// printable.
func withOptions(s Subject, suffix string) (Subject, error) {
	if suffix == "" {
		return s, nil
	}
	s.Options = map[string]string{}
	for _, kv := range strings.Split(suffix, "+") {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok || k == "" || v == "":
			return Subject{}, fmt.Errorf("lock %s: option %q: want option=value", s.Info.Name, kv)
		case !slices.Contains(s.Info.Options, k):
			return Subject{}, fmt.Errorf("lock %s has no option %q (allowed: %s)", s.Info.Name, k, orNone(s.Info.Options))
		case len(k) > maxOptionLen || len(v) > maxOptionLen || !printableWord(v):
			return Subject{}, fmt.Errorf("lock %s: option %s: the value must be 1 to %d printable characters without spaces or '+'", s.Info.Name, k, maxOptionLen)
		}
		if _, dup := s.Options[k]; dup {
			return Subject{}, fmt.Errorf("lock %s: option %s given twice", s.Info.Name, k)
		}
		s.Options[k] = v
	}
	return s, nil
}

func printableWord(v string) bool {
	for _, r := range v {
		if r <= ' ' || r == 0x7f || r == '+' || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
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
// worker binary serves (see ExtWorker). The name may carry options
// ("redisson+wait-replicas=1"; see Subject.Options).
func BuiltIn(ctx context.Context, label string) (Subject, error) {
	name, opts, _ := strings.Cut(label, "+")
	if info, ok := lockimpl.Lookup(name); ok {
		return withOptions(Subject{Info: info, Shipped: true}, opts)
	}
	if s, ok, err := extSubject(ctx, name); ok || err != nil {
		if err != nil {
			return s, err
		}
		return withOptions(s, opts)
	}
	return Subject{}, fmt.Errorf("unknown lock %q (known: %s)", name, strings.Join(KnownLocks(ctx), ", "))
}

// External starts a worker command, asks it which lock it runs (lock may
// be empty: the worker then names its own) and returns it as a subject.
// The lock may carry options, as BuiltIn's label does ("rueidislock+
// try-next-after=200ms"): the worker is asked for the lock by its name,
// and the options are checked against those it declares.
func External(ctx context.Context, command []string, lock string) (Subject, error) {
	if len(command) == 0 {
		return Subject{}, fmt.Errorf("-worker: empty command")
	}
	if cluster.DebianPackage(command[0]) != "" {
		// An interpreter lockfault knows: named with its package.
		if err := cluster.CheckPrograms(command[0]); err != nil {
			return Subject{}, err
		}
	}
	name, opts, _ := strings.Cut(lock, "+")
	info, err := Describe(ctx, command, name)
	if err != nil {
		return Subject{}, err
	}
	return withOptions(Subject{Info: info, Command: command}, opts)
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
