// Package cgroup gives each worker a cgroup v2 of its own, so that killing
// the worker kills everything it forked, a descendant that left its process
// group included; and removes the cgroups of runs whose harness is gone.
package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A worker runs in its own process group, which kill ends; but a
// descendant that started a session or group of its own (setsid, a daemon)
// leaves that group. So each worker of a run also starts inside a cgroup
// v2 of its own (clone3 with CLONE_INTO_CGROUP, so nothing it forks escapes
// it), and killing the worker kills the whole cgroup (cgroup.kill). Where no
// writable cgroup v2 hierarchy exists (an unprivileged container), the
// process group is all there is, and the run says so in a setup note.

// Prefix starts the name of every cgroup lockfault creates:
// lockfault-<harness pid>-<run id>-<worker>.
const Prefix = "lockfault-"

// killWait bounds how long a killed cgroup may take to empty.
const killWait = 5 * time.Second

// Group is one worker's cgroup.
type Group struct {
	dir  string
	fd   *os.File
	once sync.Once
	err  error
}

// Root is the writable cgroup v2 directory this process runs in, or
// why there is none.
func Root() (string, error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	own, err := ownCgroup()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(mount, own)
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return "", fmt.Errorf("cgroup %s is not writable: %v", dir, err)
	}
	return dir, nil
}

// cgroup2Mount finds where the cgroup v2 hierarchy is mounted.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ... mountpoint ... - fstype source options
		fields := strings.Fields(sc.Text())
		for i, x := range fields {
			if x == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return fields[4], nil
			}
		}
	}
	return "", errors.New("no cgroup v2 hierarchy is mounted")
}

// ownCgroup is this process's cgroup v2 path ("0::/path").
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			return rest, nil
		}
	}
	return "", errors.New("this process is in no cgroup v2")
}

// New creates the cgroup a worker of a run starts in.
func New(runID, worker string) (*Group, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, fmt.Sprintf("%s%d-%s-%s", Prefix, os.Getpid(), runID, worker))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	fd, err := os.Open(dir)
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	return &Group{dir: dir, fd: fd}, nil
}

// FD is the cgroup's open directory, for clone3's CLONE_INTO_CGROUP
// (syscall.SysProcAttr.CgroupFD).
func (c *Group) FD() int { return int(c.fd.Fd()) }

// Kill kills every process in the cgroup, waits until it is empty and
// removes it. A nil Group has nothing to kill.
func (c *Group) Kill() error {
	if c == nil {
		return nil
	}
	c.once.Do(func() {
		c.fd.Close()
		c.err = killDir(c.dir)
	})
	return c.err
}

func killDir(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		// A kernel before 5.14: kill what is there, one by one.
		for _, pid := range pids(dir) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	deadline := time.Now().Add(killWait)
	for len(pids(dir)) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s still has processes %v after %v", dir, pids(dir), killWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return os.Remove(dir)
}

func pids(dir string) []int {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// Clean removes the worker cgroups of runs whose harness is gone
// (a SIGKILLed run), killing what is left in them; only cgroups named by
// lockfault (lockfault-<harness pid>-...) are touched.
func Clean() (int, error) {
	root, err := Root()
	if err != nil {
		return 0, nil // nothing lockfault could have created
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), Prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || (pid != os.Getpid() && syscall.Kill(pid, 0) == nil) {
			continue // not ours, or its harness still runs
		}
		if err := killDir(filepath.Join(root, e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
