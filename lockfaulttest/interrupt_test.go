package lockfaulttest_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/internal/cgroup"
	"github.com/lockfault/lockfault/lockfaulttest"
)

// The user's test that TestCtrlCStopsAndCleansUp interrupts: a property
// long enough to be under way when Ctrl-C comes. It runs only in the
// process that test starts (and the workers that process starts).
func TestInterruptedByCtrlC(t *testing.T) {
	if os.Getenv("LFT_INTERRUPT_CHILD") == "" {
		t.Skip("run by TestCtrlCStopsAndCleansUp")
	}
	lockfaulttest.Run(t, minimalLock, lockfaulttest.Options{Backend: "process", Cycles: 200,
		ReportsDir: os.Getenv("LFT_REPORTS"), Only: []string{"exclusion/no-faults"}})
}

// Ctrl-C in a user's `go test` (the signal to the test binary's process
// group) stops the run under way, which removes its nodes, its worker
// processes and their cgroups, and its temporary folders before the
// binary exits: the binary exits of its own accord, failing, with
// nothing of the run left.
func TestCtrlCStopsAndCleansUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real nodes")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	reports := filepath.Join(tmp, "reports")
	var out bytes.Buffer
	cmd := exec.Command(self, "-test.run=^TestInterruptedByCtrlC$", "-test.v", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "LFT_INTERRUPT_CHILD=1", "LFT_REPORTS="+reports)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // only if the test failed on the way
	}()
	// Under way: the history is being written and the nodes and workers run.
	deadline := time.Now().Add(2 * time.Minute)
	for !historyStarted(reports) || len(runLeftovers(tmp, cmd.Process.Pid)) == 0 {
		select {
		case err := <-done:
			t.Fatalf("the test ended before it was interrupted (%v):\n%s", err, out.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no run under way within 2 minutes:\n%s", out.String())
		}
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("no exit within a minute of Ctrl-C: a hang\n%s", out.String())
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		t.Errorf("the test binary was killed by %v: nothing stopped the run", ws.Signal())
	}
	if ws.ExitStatus() == 0 || !strings.Contains(out.String(), "interrupted (Ctrl-C or SIGTERM)") {
		t.Errorf("exit %d, want a failure saying it was interrupted:\n%s", ws.ExitStatus(), out.String())
	}
	if left := runLeftovers(tmp, cmd.Process.Pid); len(left) > 0 {
		t.Errorf("left behind after Ctrl-C: %v\n%s", left, out.String())
	}
}

// historyStarted reports whether a run under root has recorded its
// workers' first operations (ten lines of history).
func historyStarted(root string) bool {
	found := false
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "history.jsonl" {
			b, _ := os.ReadFile(p)
			found = found || bytes.Count(b, []byte("\n")) >= 10
		}
		return nil
	})
	return found
}

// runLeftovers lists what a run of the test binary pid made under tmp or
// in the cgroup hierarchy that still exists: temporary folders, processes
// working in them, worker cgroups.
func runLeftovers(tmp string, pid int) []string {
	out, _ := filepath.Glob(filepath.Join(tmp, cluster.TempPrefix+"*"))
	procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, p := range procs {
		if cwd, err := os.Readlink(p); err == nil && strings.HasPrefix(cwd, tmp+"/") {
			out = append(out, p+" -> "+cwd)
		}
	}
	if root, err := cgroup.Root(); err == nil {
		groups, _ := filepath.Glob(filepath.Join(root, fmt.Sprintf("%s%d-*", cgroup.Prefix, pid)))
		out = append(out, groups...)
	}
	return out
}
