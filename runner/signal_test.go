package runner

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"

	"github.com/lockfault/lockfault/faults"
)

// A signal to a worker that has just died (reaped, its death not yet seen:
// a crash of the same client a moment before) says the client is gone, as
// it does once the death is seen, and never fails the run: a hunt drew a
// crash of c1 and a pause of c1 at the same moment, and "pause-client on
// c1: no such process" ended the run as a harness failure.
func TestSignalToAJustDeadWorkerIsClientGone(t *testing.T) {
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	p := newProcess("c1") // its death not yet seen
	p.cmd = cmd
	for _, sig := range []syscall.Signal{syscall.SIGSTOP, syscall.SIGCONT, syscall.SIGKILL} {
		if err := p.Signal(sig); !errors.Is(err, faults.ErrClientGone) {
			t.Errorf("%v to a reaped worker: %v, want an error wrapping faults.ErrClientGone", sig, err)
		}
	}
}
