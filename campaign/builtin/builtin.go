// Package builtin is the campaign catalog of lockfault's own registries:
// the built-in locks, the suite's properties, the built-in scenarios and
// the promise table, for campaign.ReadFile and campaign.FromValues. It is
// apart from package campaign so that campaign imports none of the run
// packages (reports reads campaign's files).
package builtin

import (
	"github.com/lockfault/lockfault/campaign"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/scenarios"
	"github.com/lockfault/lockfault/suite"
)

// Catalog lists what lockfault knows now.
func Catalog() campaign.Catalog {
	var props []string
	for _, p := range suite.All() {
		props = append(props, p.Name)
	}
	return campaign.Catalog{Locks: lockimpl.Names(), Properties: props, Scenarios: scenarios.Names(), Promise: promise, CheckScenario: checkScenario}
}

// promise is the promise table's outcome of a built-in lock on a property.
func promise(lock, property string) campaign.Outcome {
	info, ok := lockimpl.Lookup(lock)
	p, ok2 := suite.Lookup(property)
	if !ok || !ok2 {
		return ""
	}
	o, _ := suite.Expected(info, p)
	return campaign.Outcome(o)
}

// checkScenario parses a scenario file as `simulate run` would.
func checkScenario(path string, data []byte) error {
	_, err := scenarios.Parse(path, data)
	return err
}
