package suite_test

import (
	"testing"

	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/suite"
)

// noFailpoints is the suffix of a mutation lock registered again without
// any failpoint: the properties that attack a step inside it must then do
// it through its Redis commands (the by-command variant).
const noFailpoints = "-no-failpoints"

func init() {
	for _, p := range suite.All() {
		if p.Failpoint == "" {
			continue
		}
		registerNoFailpoints(p.Broken)
		registerNoFailpoints(p.Correct)
	}
}

// registerNoFailpoints registers name+noFailpoints: the lock name without
// its failpoints (its by-command twin), once.
func registerNoFailpoints(name string) {
	if _, done := lockimpl.Lookup(name + noFailpoints); done {
		return
	}
	info, ok := lockimpl.Lookup(name)
	if !ok {
		return
	}
	info.Name, info.Failpoints = name+noFailpoints, nil
	lockimpl.Register(info, func(cfg lockimpl.Config) (lockimpl.Lock, error) { return lockimpl.New(name, cfg) })
}

// byCommandMutations are the properties whose broken lock breaks between
// two of its commands (the release's check and delete; the acquire's write
// and what should follow it): the trigger fires between them. (Those whose
// pause must fall inside one call, before it returns, cannot be reached
// from the network when the client's read timeout is shorter than the
// pause: the call then times out, as a real pause makes it.)
var byCommandMutations = []string{"stale/release-mid-release", "crash/mid-acquire"}

// TestMutationsByCommand runs the properties that attack a step between
// two commands of a lock against their mutation pair with the failpoint
// declarations removed: the command-level trigger must catch the broken
// lock at the same step and pass the correct one.
//
//	go test -run 'TestMutationsByCommand/stale/release-mid-release' ./suite
func TestMutationsByCommand(t *testing.T) {
	cycles := 2
	if testing.Short() {
		cycles = 1
	}
	for _, name := range byCommandMutations {
		p, _ := suite.Lookup(name)
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			broken, correct := p.Broken+noFailpoints, p.Correct+noFailpoints
			if info, _ := lockimpl.Lookup(broken); !p.ByCommand(info) {
				t.Fatalf("%s still declares the failpoint %s", broken, p.Failpoint)
			}
			t.Run("broken", func(t *testing.T) {
				t.Parallel()
				o := runProperty(t, p.Name, broken, cycles)
				if held(o) {
					t.Errorf("%s by command held against %s, a lock broken in exactly the way it targets (observed %v)", p.Name, broken, o.Result.Observed)
				}
			})
			t.Run("correct", func(t *testing.T) {
				t.Parallel()
				o := runProperty(t, p.Name, correct, cycles)
				if !held(o) {
					t.Errorf("%s by command violated by the correct lock %s: %s\n%s report: %s", p.Name, correct, o.Meta.Why, findings(o), o.Dir)
				}
			})
		})
	}
}
