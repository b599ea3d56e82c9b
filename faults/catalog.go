package faults

import (
	"time"

	"github.com/lockfault/lockfault/scenarios"
)

// The scenario format checks fault steps against this registry when it
// validates a scenario: installed here, so that scenarios does not depend on
// the nemesis.
func init() { scenarios.SetFaults(catalog{}) }

// catalog is the registry as scenarios.FaultCatalog.
type catalog struct{}

func (catalog) Known(name string) error {
	_, _, err := Get(name)
	return err
}

func (catalog) Check(name string, p map[string]string) error { return Check(name, Params(p)) }

func (catalog) InjectTime(name string, p map[string]string) time.Duration {
	return InjectTime(name, Params(p))
}

func (catalog) ClientParam(p map[string]string) (string, int) {
	return ParamClients, ClientTarget(p[ParamClients])
}
