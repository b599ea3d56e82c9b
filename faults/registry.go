package faults

import (
	"time"

	"github.com/lockfault/lockfault/scenarios"
)

// The scenario format checks fault steps against this registry when it
// validates a scenario: installed here, so that scenarios does not depend on
// the nemesis.
func init() { scenarios.SetFaults(schemeView{}) }

// schemeView is the registry as seen by scenarios.FaultRegistry.
type schemeView struct{}

func (schemeView) Known(name string) error {
	_, _, err := Get(name)
	return err
}

func (schemeView) Check(name string, p map[string]string) error { return Check(name, Params(p)) }

func (schemeView) InjectTime(name string, p map[string]string) time.Duration {
	return InjectTime(name, Params(p))
}

func (schemeView) ClientParam(p map[string]string) (string, int) {
	return ParamClients, ClientTarget(p[ParamClients])
}
