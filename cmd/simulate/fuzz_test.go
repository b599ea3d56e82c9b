package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lockfault/lockfault/campaign"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/hunt"
	"github.com/lockfault/lockfault/internal/printable"
	"github.com/lockfault/lockfault/runner"
)

// FuzzCommandLine gives every subcommand arbitrary flags and arguments
// followed by `-h -h` (the second -h is help even when the first was taken
// as a flag's value; `--` is dropped, so they stay flags). Whatever comes
// before, the command must print its help and exit 0, or print one error
// line naming the command (anything typed in it quoted: no control or
// bidi character gets through) and exit 2, and run nothing: nothing else is
// printed. The parsers of flag values (-shard, -known, -backend, -worker)
// get the same arguments: they refuse or accept, and never panic.
func FuzzCommandLine(f *testing.F) {
	// Should a command run despite the bug this target looks for, it finds
	// no engine and no node binary.
	f.Setenv("DOCKER_HOST", "unix:///nonexistent/lockfault-fuzz.sock")
	f.Setenv("PATH", f.TempDir())
	for _, s := range []string{
		"", "-bogus", "-backend\x00nope", "-backend=process", "-lock\x00single\x00extra",
		"-runs\x00-3", "-time\x0010ms", "-shard\x003/2", "-known\x00failover,bogus",
		"-worker\x00python3 'unclosed", "-parallel\x000", "-cycles\x001001",
		"master-failover\x00-cycles\x002", "-only\x00exclusion/no-faults\x00-lock",
		"-repeat\x00-1", "-emit\x00k8s\x00-shard\x001/1", "-seed\x00x",
	} {
		for i := range commands {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, line string) {
		c := commands[int(which)%len(commands)]
		var args []string
		if line != "" {
			for _, a := range strings.Split(line, "\x00") {
				if a != "--" {
					args = append(args, a)
				}
			}
		}
		var stdout, stderr bytes.Buffer
		code := realMain(append(append([]string{c.name}, args...), "-h", "-h"), &stdout, &stderr)
		switch code {
		case 0:
			if !strings.HasPrefix(stdout.String(), "usage: simulate "+c.name+" ") || stderr.Len() > 0 {
				t.Fatalf("simulate %s %q -h -h: exit 0 without its help alone:\nstdout: %q\nstderr: %q", c.name, args, stdout.String(), stderr.String())
			}
		case 2:
			msg := stderr.String()
			if stdout.Len() > 0 || !strings.HasPrefix(msg, "simulate "+c.name+": ") || !strings.HasSuffix(msg, "\n") {
				t.Fatalf("simulate %s %q -h -h: exit 2 without one error line:\nstdout: %q\nstderr: %q", c.name, args, stdout.String(), msg)
			}
			if what, _, bad := printable.Find(strings.TrimSuffix(msg, "\n"), false); bad {
				t.Fatalf("simulate %s %q -h -h: the error line holds a %s (a typed name must be quoted): %q", c.name, args, what, msg)
			}
		default:
			t.Fatalf("simulate %s %q -h -h: exit %d (want 0 for help, 2 for a bad flag)\nstdout: %q\nstderr: %q", c.name, args, code, stdout.String(), stderr.String())
		}

		for _, a := range args {
			if sh, err := campaign.ParseShard(a); err == nil && !sh.Valid() {
				t.Fatalf("-shard %q accepted as %v, which is not valid", a, sh)
			}
			if k, err := hunt.ParseKnown(list(a)); err == nil {
				for _, name := range k {
					if !strings.Contains(a, name) {
						t.Fatalf("-known %q gave %q", a, name)
					}
				}
			}
			if b, err := cluster.ParseBackend(a); err == nil && b != cluster.BackendAuto && string(b) != a {
				t.Fatalf("-backend %q parsed as %q", a, b)
			}
			if words, err := runner.SplitCommand(a); err == nil && utf8.ValidString(a) {
				for _, w := range words {
					if !utf8.ValidString(w) {
						t.Fatalf("-worker %q split into an invalid word %q", a, w)
					}
				}
			}
		}
	})
}
