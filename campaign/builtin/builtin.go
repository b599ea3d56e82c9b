// Package builtin connects campaigns to lockfault's own registries and
// runs: the registry (the locks lockfault ships, the suite's properties, the
// built-in scenarios, the promise table) for campaign.ReadFile and
// campaign.FromValues, and the Executor that makes each run real. It is
// apart from package campaign so that campaign imports none of the run
// packages (reports reads campaign's files).
package builtin

import (
	"context"

	"github.com/lockfault/lockfault/campaign"
	"github.com/lockfault/lockfault/hunt"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/scenarios"
	"github.com/lockfault/lockfault/suite"
)

// Registry lists what lockfault knows now (the known limits a worker
// subject may name are the hunt's, as `simulate hunt -known` takes them).
func Registry() campaign.Registry {
	var props []string
	for _, p := range suite.All() {
		props = append(props, p.Name)
	}
	checkLock := func(label string) error {
		_, err := runner.BuiltIn(context.Background(), label)
		return err
	}
	return campaign.Registry{Locks: runner.KnownLocks(context.Background()), CheckLock: checkLock, Properties: props, Scenarios: scenarios.Names(), Promise: promise, Limits: hunt.LimitNames(), Searches: hunt.Searches, CheckScenario: checkScenario}
}

// promise is the promise table's outcome of a built-in lock on a property.
func promise(lock, property string) campaign.Outcome {
	subj, err := runner.BuiltIn(context.Background(), lock)
	p, ok := suite.Lookup(property)
	if err != nil || !ok || !subj.Shipped {
		return ""
	}
	o, _ := suite.Promise(subj, p)
	return campaign.Outcome(o)
}

// checkScenario parses a scenario file as `simulate run` would.
func checkScenario(path string, data []byte) error {
	_, err := scenarios.Parse(path, data)
	return err
}
