package scenarios

import (
	"fmt"
	"unicode/utf8"

	"github.com/lockfault/lockfault/internal/printable"
	"gopkg.in/yaml.v3"
)

// Bounds on the text of a scenario: a longer value is refused, with the
// bound in the message.
const (
	// MaxNameLen bounds every name-like field: name, claim, compare,
	// lock.name, option names, variant names, fault, heal and await names,
	// targets, by, the keys of every mapping (options, params).
	MaxNameLen = 64
	// MaxResourceLen bounds workload.resource (it is part of every Redis
	// key the lock uses).
	MaxResourceLen = 128
	// MaxValueLen bounds the value of a lock option or a fault param.
	MaxValueLen = 256
	// MaxDescriptionLen bounds description.
	MaxDescriptionLen = 4096
	// MaxOptions bounds lock.options.
	MaxOptions = 32
	// MaxListLen bounds nemesis.random.faults and nemesis.random.targets.
	MaxListLen = 32
	// MaxVariants bounds variants.
	MaxVariants = 32
)

// checkText refuses a one-line value longer than max characters, or with a
// character that does not belong in a name (see printable.Find: control
// and format characters, the bidirectional overrides among them). An empty value
// passes (whether a field is required is its section's business).
func (s *Scenario) checkText(path, v string, max int) error {
	return s.text(path, v, max, false)
}

// checkMultiLine is checkText for free text: newlines and tabs allowed.
func (s *Scenario) checkMultiLine(path, v string, max int) error {
	return s.text(path, v, max, true)
}

func (s *Scenario) text(path, v string, max int, multiLine bool) error {
	if n := utf8.RuneCountInString(v); n > max {
		return s.ErrAt(path, "%d characters (allowed: at most %d)", n, max)
	}
	if what, at, bad := printable.Find(v, multiLine); bad {
		return s.ErrAt(path, "contains %s at character %d (allowed: %s)", what, at, printable.Allowed(multiLine))
	}
	return nil
}

// checkKey refuses a mapping key (a field name, an option's or a param's
// name) that is too long or has a character that does not belong in a
// name, before the key is looked up or printed.
func checkKey(file string, k *yaml.Node, path string) error {
	if path == "" {
		path = "(top level)"
	}
	if n := utf8.RuneCountInString(k.Value); n > MaxNameLen {
		return fmt.Errorf("%s:%d: %s: a key of %d characters (allowed: at most %d)", file, k.Line, path, n, MaxNameLen)
	}
	if what, at, bad := printable.Find(k.Value, false); bad {
		return fmt.Errorf("%s:%d: %s: a key that contains %s at character %d (allowed: %s)", file, k.Line, path, what, at, printable.Allowed(false))
	}
	return nil
}
