package lockfaulttest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockfault/lockfault/lockfaulttest"
)

// newMyLock builds your lock for one simulated client.
func newMyLock(cfg lockfaulttest.Config) (lockfaulttest.Lock, error) {
	return newMinimal(false)(cfg)
}

// Your lock, described once: what it needs and what it claims.
var myLock = lockfaulttest.LockDef{
	Info: lockfaulttest.Info{Name: "mylock", Needs: lockfaulttest.NeedsSingle},
	New:  newMyLock,
}

// In your module's test file, run the suite in a test. Each property is a
// subtest:
//
//	go test -run 'TestMyLock/exclusion/no-faults'
//	go test -short             # half the fault cycles
//	LOCKFAULT_BACKEND=process go test
func ExampleRun() {
	_ = func(t *testing.T) {
		lockfaulttest.Run(t, myLock, lockfaulttest.Options{})
	}
}

// Hunt searches random schedules for violations no property names, and
// fails the test with each one shrunk to a minimal scenario (keep it as a
// regression with Options.Extra). The lock is known to lose its grant on a
// failover: those faults are not drawn.
func ExampleHunt() {
	_ = func(t *testing.T) {
		lockfaulttest.Hunt(t, myLock, lockfaulttest.Options{
			KnownViolations: map[string]string{"failover/async-replica": "a single master replicates asynchronously"},
		}, lockfaulttest.Budget{Runs: 50, Seed: 1})
	}
}

// Which properties apply depends on what the lock claims: a lock without
// the extend capability is not attacked on extends.
func ExampleProperties() {
	run, notClaimed := lockfaulttest.Properties(myLock.Info)
	for _, p := range run {
		if p == "exclusion/no-faults" || p == "stale/release-after-pause" {
			fmt.Println("runs:", p)
		}
	}
	fmt.Println("not claimed:", notClaimed["extend/after-pause"])
	// Output:
	// runs: exclusion/no-faults
	// runs: stale/release-after-pause
	// not claimed: mylock does not claim extend
}

// Explain turns a violated property into sentences, as a failing subtest
// prints them.
func ExampleExplain() {
	row := lockfaulttest.Row{
		Property:    "exclusion/no-faults",
		Explanation: "with no faults at all, no two clients ever hold the lock at once and no update is lost",
		Outcome:     lockfaulttest.Violated,
		Expect:      []string{"safe"},
		Observed:    []string{"overlap", "corruption"},
		BadCycles:   3, Cycles: 3,
		Findings: []string{"Two holders at once: c4 (lease c4-1) and c1 (lease c1-3) both held the lock for 21ms"},
		Report:   "reports/exclusion-no-faults/run/report.md",
		Duration: 4 * time.Second,
	}
	fmt.Println(lockfaulttest.Explain(row))
	// Output:
	// property exclusion/no-faults is violated: the lock broke this promise.
	//   promise:  with no faults at all, no two clients ever hold the lock at once and no update is lost
	//   observed: overlap, corruption in 3 of 3 fault cycles (the property expects: safe)
	//   what happened:
	//     - Two holders at once: c4 (lease c4-1) and c1 (lease c1-3) both held the lock for 21ms
	//   report:   reports/exclusion-no-faults/run/report.md (history.jsonl beside it; `simulate report` on its folder draws timeline.png)
}
