package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// clean removes the temp dirs of dead harnesses and spares live ones.
func TestCleanTempSparesLiveRuns(t *testing.T) {
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer live.Process.Kill()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(pid int) string {
		d, err := os.MkdirTemp("", TempPrefix+"cleantest-")
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, ownerFile), []byte(strconv.Itoa(pid)), 0o644)
		return d
	}
	liveDir, deadDir := mk(live.Process.Pid), mk(dead.Process.Pid)
	defer os.RemoveAll(liveDir)
	if _, err := CleanTemp(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(liveDir); err != nil {
		t.Errorf("a live run's dir was removed: %v", err)
	}
	if _, err := os.Stat(deadDir); !os.IsNotExist(err) {
		t.Errorf("a dead run's dir survived: %v", err)
	}
}
