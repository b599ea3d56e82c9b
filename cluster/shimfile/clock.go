// Package shimfile reads and writes the files of faults/clockshim, the
// LD_PRELOAD library a node runs under: the clock file the node maps to move
// its realtime clock, and the fsync log from which a power loss is emulated.
// The harness uses it on its own file system (process backend, local Docker
// daemon); the node image's helper, lockfault-nodectl (cluster/image/nodectl),
// uses it inside a node's container when the Docker daemon is remote.
package shimfile

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Files the shim uses in a node's data directory: LOCKFAULT_CLOCK_FILE names
// ClockFileName; the shim derives the fsync log's path from its directory.
const (
	ClockFileName = "clock-offset"
	FsyncLogName  = "fsync.log"
)

// clockFileSize is the size of the clock file: four 8-byte words, the layout
// documented in faults/clockshim/clockshim.c:
//
//	0  int64  offset (ns) added to the realtime clock
//	8  int64  drift (ns per second of CLOCK_MONOTONIC)
//	16 int64  drift epoch (CLOCK_MONOTONIC ns at which the offset was word 0)
//	24 uint64 seqlock counter, odd while the words change
const clockFileSize = 32

// clockMu serialises the writers of every clock file in this process; an
// exclusive flock on the file serialises writers in different processes
// (the seqlock admits one writer at a time).
var clockMu sync.Mutex

// clockFile is a clock file mapped shared with the nodes that read it. The
// words are read and written with atomic operations on the mapping: a pwrite
// is not guaranteed to reach the page in a single 8-byte store, and a torn
// offset would make the node's clock jump anywhere.
type clockFile struct {
	f   *os.File
	mem []byte
}

func (c *clockFile) word(i int) *int64 { return (*int64)(unsafe.Pointer(&c.mem[8*i])) }
func (c *clockFile) seq() *uint64      { return (*uint64)(unsafe.Pointer(&c.mem[24])) }

func (c *clockFile) close() error {
	err := syscall.Munmap(c.mem)
	c.f.Close() // drops the flock
	return err
}

// openClockFile maps the clock file at path, creating it or growing it to
// clockFileSize if needed, and holds an exclusive flock on it until close.
// It never shrinks the file: a node maps it, and reading a mapped page past
// the end of a file raises SIGBUS.
func openClockFile(path string) (*clockFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.Size() < clockFileSize {
		if err := f.Truncate(clockFileSize); err != nil {
			f.Close()
			return nil, err
		}
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, clockFileSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	return &clockFile{f: f, mem: mem}, nil
}

type clockWords struct{ offset, drift, epoch int64 }

// load reads the words consistently (the seqlock's reader side).
func (c *clockFile) load() clockWords {
	for tries := 0; ; tries++ {
		s1 := atomic.LoadUint64(c.seq())
		w := clockWords{atomic.LoadInt64(c.word(0)), atomic.LoadInt64(c.word(1)), atomic.LoadInt64(c.word(2))}
		if s2 := atomic.LoadUint64(c.seq()); (s1 == s2 && s1&1 == 0) || tries > 10000 {
			return w
		}
	}
}

// store writes the words (the seqlock's writer side; hold clockMu and the flock).
func (c *clockFile) store(w clockWords) {
	atomic.AddUint64(c.seq(), 1)
	atomic.StoreInt64(c.word(0), w.offset)
	atomic.StoreInt64(c.word(1), w.drift)
	atomic.StoreInt64(c.word(2), w.epoch)
	atomic.AddUint64(c.seq(), 1)
}

// effective is the offset the shim applies at CLOCK_MONOTONIC time now,
// computed as the shim computes it.
func (w clockWords) effective(now int64) int64 {
	if w.drift == 0 || now <= w.epoch {
		return w.offset
	}
	el := now - w.epoch
	// drift*el/1e9 without overflowing int64.
	return w.offset + w.drift*(el/1e9) + w.drift*(el%1e9)/1e9
}

// monotonicNow is CLOCK_MONOTONIC in nanoseconds, the clock the shim's drift
// runs on: that of the kernel the caller runs on, so the writer of a clock
// file must run on the node's machine (a remote daemon's nodes have their
// files written by lockfault-nodectl, inside their containers).
func monotonicNow() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

func update(path string, f func(w clockWords, now int64) clockWords) error {
	clockMu.Lock()
	defer clockMu.Unlock()
	c, err := openClockFile(path)
	if err != nil {
		return err
	}
	defer c.close()
	now, err := monotonicNow()
	if err != nil {
		return err
	}
	c.store(f(c.load(), now))
	return nil
}

// SetOffset moves the realtime clock of the node that maps the clock file at
// path to real time + d, from now on. A drift set by SetDrift keeps running
// from d. The file may not be mapped yet: the offset applies from the node's
// next start.
func SetOffset(path string, d time.Duration) error {
	return update(path, func(w clockWords, now int64) clockWords {
		return clockWords{offset: int64(d), drift: w.drift, epoch: now}
	})
}

// SetDrift makes the node's realtime clock gain perSecond (lose, if
// negative) for every second that passes, starting from its current offset.
// Zero stops the drift, keeping the offset reached.
func SetDrift(path string, perSecond time.Duration) error {
	return update(path, func(w clockWords, now int64) clockWords {
		return clockWords{offset: w.effective(now), drift: int64(perSecond), epoch: now}
	})
}

// Offset is the current offset of the clock file at path (zero if there is
// no such file).
func Offset(path string) (time.Duration, error) {
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return 0, nil
	}
	clockMu.Lock()
	defer clockMu.Unlock()
	c, err := openClockFile(path)
	if err != nil {
		return 0, err
	}
	defer c.close()
	now, err := monotonicNow()
	if err != nil {
		return 0, err
	}
	return time.Duration(c.load().effective(now)), nil
}
