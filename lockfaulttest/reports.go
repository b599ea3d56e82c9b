package lockfaulttest

import (
	"os"
	"path/filepath"
	"slices"

	reports "github.com/lockfault/lockfault/report"
	"github.com/lockfault/lockfault/runner"
)

// keptRuns is how many runs each property's folder of reports keeps
// (Options.ReportsDir/gotest/<lock>/<property>/): the newest, so that a
// violation's, a known violation's or a harness error's report stays to
// be read, and a test run every day does not fill the temp folder.
// Options.KeepReports keeps every one.
const keptRuns = 5

// pruneRuns removes, beside run (one run's report folder), the oldest
// finished runs beyond keptRuns. It removes only what a run of lockfault
// wrote: a folder named as a run id (runner.IsRunID; they sort by start)
// that holds a finished report (report.json, written at the run's end). A
// run still under way, in another test binary, has none yet and is left
// alone, as is anything else in the folder.
func pruneRuns(run string) {
	dir := filepath.Dir(run)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var done []string
	for _, e := range ents {
		if !e.IsDir() || !runner.IsRunID(e.Name()) {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), reports.FileJSON)); err == nil {
			done = append(done, e.Name())
		}
	}
	slices.Sort(done)
	for len(done) > keptRuns {
		os.RemoveAll(filepath.Join(dir, done[0]))
		done = done[1:]
	}
}
