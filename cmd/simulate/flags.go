package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/internal/printable"
)

// flags is a subcommand's flag set: -h prints its help to stdout (exit 0),
// an unknown flag or a bad value is an error (exit 2), and nothing runs in
// either case.
type flags struct {
	*flag.FlagSet
	name, args   string
	stdout, errw io.Writer
}

func newFlags(name, args string, stdout, stderr io.Writer) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	f := &flags{FlagSet: fs, name: name, args: args, stdout: stdout, errw: stderr}
	fs.SetOutput(io.Discard) // errors are printed by parse, help by help
	return f
}

func (f *flags) help(w io.Writer) {
	fmt.Fprintf(w, "usage: simulate %s [flags] %s\n\nflags:\n", f.name, f.args)
	f.SetOutput(w)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
}

// parse parses flags that may come before or after the positional
// arguments, and returns those. ok false: the caller returns code.
func (f *flags) parse(args []string) (pos []string, code int, ok bool) {
	rest, after := args, []string(nil)
	if i := slices.Index(args, "--"); i >= 0 {
		rest, after = args[:i], args[i+1:] // everything after -- is positional
	}
	defer func() { pos = append(pos, after...) }()
	for len(rest) > 0 {
		if err := f.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				f.help(f.stdout)
				return nil, 0, false
			}
			fmt.Fprintf(f.errw, "simulate %s: %s (simulate %s -h: its flags)\n", f.name, flagError(err), f.name)
			return nil, 2, false
		}
		rest = f.Args()
		if len(rest) > 0 {
			pos = append(pos, rest[0])
			rest = rest[1:]
		}
	}
	return pos, 0, true
}

// noArgs parses flags only.
func (f *flags) noArgs(args []string) (code int, ok bool) {
	pos, code, ok := f.parse(args)
	if ok && len(pos) > 0 {
		f.fail("unexpected argument %q (flags only)", pos[0])
		return 2, false
	}
	return code, ok
}

// fail prints "simulate NAME: message" on stderr.
func (f *flags) fail(format string, args ...any) int {
	fmt.Fprintf(f.errw, "simulate %s: %s\n", f.name, fmt.Sprintf(format, args...))
	return 2
}

// backend adds -backend (parsed by cluster.ParseBackend).
func (f *flags) backend() *cluster.BackendKind {
	k := cluster.BackendAuto
	f.Var(&k, "backend", "node backend: docker, process or auto (docker when an engine answers)")
	return &k
}

// list splits a comma-separated flag value.
func list(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// interruptible is a context cancelled by Ctrl-C, SIGTERM or SIGHUP.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
}

// set reports whether a flag was given.
func (f *flags) set(name string) bool {
	found := false
	f.Visit(func(fl *flag.Flag) { found = found || fl.Name == name })
	return found
}

// limitMemory: a long history is held in memory while it is checked: ask
// the garbage collector to work harder rather than let the heap pass
// 768 MiB (a soft limit: a bigger history still gets checked).
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(768 << 20)
	}
}

var invalidValue = regexp.MustCompile(`^invalid value "(?:[^"\\]|\\.)*" for flag (-[^:]+): `)

// flagError words a flag package error as `-flag: what is wrong`. The
// message carries what the user typed (an unknown flag's name): when that
// holds anything but printable characters (a newline, an escape sequence,
// a bidi override), the message is escaped, so it stays one line.
func flagError(err error) string {
	msg := invalidValue.ReplaceAllString(err.Error(), "$1: ")
	if _, _, bad := printable.Find(msg, false); bad {
		msg = strings.Trim(strconv.Quote(msg), `"`)
	}
	return msg
}
