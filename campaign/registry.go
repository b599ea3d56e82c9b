package campaign

// Registry is what a definition is checked against: the names lockfault
// knows. The command line builds it from lockimpl, suite and scenarios
// (package campaign/builtin); tests build small ones.
type Registry struct {
	// Locks are the built-in lock names.
	Locks []string
	// CheckLock checks a lock named with options ("redisson+wait-replicas=1";
	// nil: no name with options is accepted).
	CheckLock func(label string) error
	// Properties are the suite's property names ("exclusion/no-faults").
	Properties []string
	// Scenarios are the built-in scenario names.
	Scenarios []string
	// Promise is the promise table: the outcome a built-in lock is
	// expected to show on a property (held, violated or not-claimed).
	// Nil means held everywhere.
	Promise func(lock, property string) Outcome
	// Limits are the known limits a worker subject may name (`known:`,
	// -worker-known): the names `simulate hunt -known` accepts
	// (hunt.LimitNames), whose faults a hunt of that subject never draws.
	Limits []string
	// Searches are the searches a hunt item may name (`search:`; the
	// names `simulate hunt -search` takes, hunt.Searches); the first is
	// the default. Nil: a hunt item names none.
	Searches []string
	// CheckScenario checks a scenario file named by a definition (nil:
	// not checked); its error names the file and line.
	CheckScenario func(path string, data []byte) error
}

// expand returns the properties a name or a prefix selects, in the
// catalog's order: "exclusion" selects "exclusion/no-faults".
func (c Registry) expand(pat string) []string {
	var out []string
	for _, p := range c.Properties {
		if p == pat || len(p) > len(pat) && p[:len(pat)] == pat && p[len(pat)] == '/' {
			out = append(out, p)
		}
	}
	return out
}
