// Package procwatch observes the processes the harness starts (workers,
// servers): their threads' states and kernel waits in /proc, whether one is
// gone, its process group, and the last bytes of its output.
package procwatch

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ThreadsStopped reports whether every thread of pid is in the stopped state.
func ThreadsStopped(pid int) bool {
	ts := Threads(pid, false)
	for _, t := range ts {
		if t.State != 'T' && t.State != 't' {
			return false
		}
	}
	return len(ts) > 0
}

// Thread is one thread's state as /proc shows it (R running, S sleeping, D
// uninterruptible, T stopped, t stopped by a tracer, Z zombie) and, when
// asked for and readable (root), the kernel function it waits in (the top
// of /proc/PID/task/TID/stack: pipe_write, futex_wait_queue, ...).
type Thread struct {
	State byte
	Wait  string
}

// Threads lists pid's threads; empty when the process is gone.
func Threads(pid int, wait bool) []Thread {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []Thread
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/stat")
		if err != nil {
			continue // the thread exited
		}
		// The state follows the command name, which is in parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			continue
		}
		th := Thread{State: b[i+2]}
		if wait {
			th.Wait = kernelWait(dir + "/" + t.Name() + "/stack")
		}
		out = append(out, th)
	}
	return out
}

// kernelWait is the function at the top of a thread's kernel stack
// ("[<0>] pipe_write+0x1e2/0x4a0" gives pipe_write), or "".
func kernelWait(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var buf [256]byte
	n, _ := io.ReadFull(f, buf[:])
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	_, fn, ok := strings.Cut(line, "] ")
	if !ok {
		return ""
	}
	fn, _, _ = strings.Cut(fn, "+")
	return fn
}

// Gone reports whether pid has exited (absent or a zombie).
func Gone(pid int) bool {
	st, ok := state("/proc/" + strconv.Itoa(pid) + "/stat")
	return !ok || st == 'Z' || st == 'X'
}

// Group returns the process group of pid.
func Group(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:])) // state ppid pgrp ...
	if len(f) < 3 {
		return 0, false
	}
	g, err := strconv.Atoi(f[2])
	return g, err == nil
}

// state reads the state letter of a /proc stat file; it follows the
// command name, which is in parentheses.
func state(path string) (byte, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, false
	}
	return b[i+2], true
}

// Tail keeps the last bytes written to it (a process's stderr).
type Tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

// NewTail keeps the last max bytes.
func NewTail(max int) *Tail { return &Tail{max: max} }

func (t *Tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, b...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(b), nil
}

// String is what was kept.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
