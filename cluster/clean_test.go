package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// clean removes the run directories of dead harnesses (killing the node
// processes they recorded) and spares live runs and everything that is not
// a lockfault run directory, starting with "$TMPDIR/lockfault-unrelated".
func TestCleanTempTouchesOnlyDeadRunsOfItsOwn(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name, owner string) string {
		d := filepath.Join(tmp, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			os.WriteFile(filepath.Join(d, ownerFile), []byte(owner), 0o644)
		}
		return d
	}
	deadPid, livePid := dead.Process.Pid, live.Process.Pid
	liveDir := mk("lockfault-20261123-070000-aaaaaa-1", fmt.Sprintf("lockfault run=20261123-070000-aaaaaa pid=%d\n", livePid))
	deadDir := mk("lockfault-20261123-070000-bbbbbb-2", fmt.Sprintf("lockfault run=20261123-070000-bbbbbb pid=%d\n", deadPid))
	// Not lockfault's: no owner file, an owner of another form, an owner
	// naming another run, a name that is not lockfault-<run>-<n>, a file.
	spared := []string{
		mk("lockfault-mine", ""),
		mk("lockfault-20261123-070000-cccccc-3", fmt.Sprint(deadPid)),
		mk("lockfault-20261123-070000-dddddd-4", fmt.Sprintf("lockfault run=other pid=%d\n", deadPid)),
		mk("lockfault-notes", fmt.Sprintf("lockfault run=notes pid=%d\n", deadPid)),
	}
	unrelated := filepath.Join(tmp, "lockfault-unrelated")
	if err := os.WriteFile(unrelated, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	spared = append(spared, unrelated)

	// A node process the dead run recorded, running from its node dir.
	nodeDir := filepath.Join(deadDir, "n1")
	os.MkdirAll(nodeDir, 0o755)
	orphan := exec.Command("sleep", "30")
	orphan.Dir = nodeDir
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	gone := make(chan struct{})
	go func() { orphan.Wait(); close(gone) }()
	defer orphan.Process.Kill()
	os.WriteFile(filepath.Join(nodeDir, pidFile), []byte(fmt.Sprintf("%d\n", orphan.Process.Pid)), 0o644)
	// A recorded pid that is not running from the dir (recycled): spared.
	os.MkdirAll(filepath.Join(deadDir, "n2"), 0o755)
	os.WriteFile(filepath.Join(deadDir, "n2", pidFile), []byte(fmt.Sprintf("%d\n", livePid)), 0o644)

	n, err := CleanTemp()
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("removed %d, want 1", n)
	}
	if _, err := os.Stat(deadDir); !os.IsNotExist(err) {
		t.Errorf("a dead run's dir survived: %v", err)
	}
	if _, err := os.Stat(liveDir); err != nil {
		t.Errorf("a live run's dir was removed: %v", err)
	}
	for _, p := range spared {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s is not lockfault's but was removed", filepath.Base(p))
		}
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Error("the dead run's recorded node process was not killed")
	}
	if err := syscall.Kill(livePid, 0); err != nil {
		t.Error("a process that merely reused a recorded pid was killed")
	}
}

// The run directories the backends make have the form clean recognises.
func TestRunDirIsRecognised(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	d, err := NewRunDir("20261123-070000-abcdef")
	if err != nil {
		t.Fatal(err)
	}
	pid, ok := runDirOwner(d)
	if !ok || pid != os.Getpid() {
		t.Fatalf("runDirOwner(%s) = %d, %v", d, pid, ok)
	}
}
