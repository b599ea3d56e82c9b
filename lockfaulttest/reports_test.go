package lockfaulttest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A property's folder keeps its newest keptRuns finished runs; older
// finished runs go, and nothing else does: a run still under way (no
// report.json yet), a folder not named as a run, a file.
func TestPruneKeepsTheNewestFinishedRuns(t *testing.T) {
	dir := t.TempDir()
	var finished []string
	for i := range keptRuns + 3 {
		name := fmt.Sprintf("20261129-1500%02d-a1b2c3", i)
		finished = append(finished, name)
		mkRun(t, filepath.Join(dir, name), true)
	}
	underWay := "20261129-140000-ffffff" // older than every finished run
	mkRun(t, filepath.Join(dir, underWay), false)
	mkRun(t, filepath.Join(dir, "0-notes"), true) // sorts before every run
	if err := os.WriteFile(filepath.Join(dir, "README"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	pruneRuns(filepath.Join(dir, finished[len(finished)-1]))

	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	want := append([]string{underWay}, finished[len(finished)-keptRuns:]...)
	want = append(want, "0-notes", "README")
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("left %v\nwant %v", left, want)
	}
}

// mkRun makes a run's folder, with its report.json when finished.
func mkRun(t *testing.T, dir string, finished bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if finished {
		if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
