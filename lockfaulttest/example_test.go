package lockfaulttest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/lockfault/lockfault/lockfaulttest"
)

// In your module's test file: register your lock in TestMain (the test
// binary then also serves as lockfault's worker) and run the suite in a
// test. Each property is a subtest:
//
//	go test -run 'TestMyLock/exclusion/no-faults'
//	go test -short             # half the fault cycles
//	LOCKFAULT_BACKEND=process go test
func ExampleRun() {
	// func TestMain(m *testing.M) {
	// 	lockfaulttest.Main(m, lockfaulttest.LockDef{
	// 		Info: lockfaulttest.Info{Name: "mylock", Needs: lockfaulttest.NeedsSingle,
	// 			Caps: []string{lockfaulttest.CapExtend}},
	// 		New: newMyLock,
	// 	})
	// }
	_ = func(t *testing.T) {
		lockfaulttest.Run(t, "mylock", lockfaulttest.Options{})
	}
}

// Suite is the error-returning form: it writes the report card (suite.md,
// suite.png, junit.xml, ...) and returns it.
func ExampleSuite() {
	_ = func() error {
		c, err := lockfaulttest.Suite(context.Background(), "mylock", lockfaulttest.Options{Backend: "process", Short: true})
		if err != nil {
			return err
		}
		for _, r := range c.Rows {
			fmt.Println(r.Property, r.Outcome)
		}
		fmt.Println("card:", c.Dir)
		return nil
	}
}
