package scenarios_test

// The tests check fault steps against the real registry of faults, which
// the faults package installs (scenarios.SetFaults) when it is linked.
import _ "github.com/lockfault/lockfault/faults"
