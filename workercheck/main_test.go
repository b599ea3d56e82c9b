package workercheck

import (
	"os"
	"testing"

	"github.com/lockfault/lockfault/worker"
)

// envBreak selects, in this test binary run as a worker, the one rule the
// built-in worker is made to break (see breaks_test.go); empty: none.
const envBreak = "WCHECK_BREAK"

// TestMain lets the test binary double as the worker under check: started
// with LOCKFAULT_ROLE=worker it runs the built-in worker, through a wrapper
// that breaks the rule WCHECK_BREAK names.
func TestMain(m *testing.M) {
	if worker.IsWorker() {
		if b := os.Getenv(envBreak); b != "" {
			os.Exit(runBroken(b))
		}
		worker.Main()
		return
	}
	os.Exit(m.Run())
}
