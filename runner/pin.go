package runner

import (
	"maps"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/faults"
)

// pinHolder resolves a fault step's "holder" (its target, or its clients
// param) once, as the step begins: the client that holds the lock now, the
// one the await before the step saw granted. The step's effect check and
// its injection then act on that client. Resolved twice, the check's own
// time (it reads the namespace's socket tables, tens of milliseconds on a
// busy machine) let a short hold end between the two, and the injection
// found nobody holding (redsync × liveness/holder-partition came out not
// exercised in make cards). With nobody holding, the step is left as it is
// and its injection says so (not exercised).
func (r *run) pinHolder(fault, target string, params map[string]string) (string, map[string]string) {
	_, info, err := faults.Get(fault)
	if err != nil {
		return target, params
	}
	if info.Targets == faults.TargetsClient && target == lockfault.TargetHolder {
		if name, ok := r.holderNow(); ok {
			target = name
		}
	}
	if params[faults.ParamClients] == lockfault.TargetHolder {
		if name, ok := r.holderNow(); ok {
			params = maps.Clone(params)
			params[faults.ParamClients] = name
		}
	}
	return target, params
}

// holderNow is the client that holds the lock now, if any.
func (r *run) holderNow() (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.holder, r.holder != ""
}
