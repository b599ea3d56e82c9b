package cluster

// The harness side of faults/clockshim, the LD_PRELOAD library a node runs
// under when NodeSpec.ClockShim is set: moving the node's realtime clock,
// and emulating a power loss from the shim's log of what was fsync'd.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Files the shim uses in a node's data directory. The process backend points
// LOCKFAULT_CLOCK_FILE at ClockFileName; the shim derives the fsync log's path
// from its directory.
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

// clockMu serialises the writers of every clock file in this process (the
// seqlock admits one writer at a time).
var clockMu sync.Mutex

// clockFile is a clock file mapped shared with the nodes that read it. The
// words are read and written with atomic operations on the mapping: a pwrite
// is not guaranteed to reach the page in a single 8-byte store, and a torn
// offset would make the node's clock jump anywhere.
type clockFile struct {
	mem []byte
}

func (c *clockFile) word(i int) *int64 { return (*int64)(unsafe.Pointer(&c.mem[8*i])) }
func (c *clockFile) seq() *uint64      { return (*uint64)(unsafe.Pointer(&c.mem[24])) }
func (c *clockFile) close() error      { return syscall.Munmap(c.mem) }

// openClockFile maps the clock file at path, creating it or growing it to
// clockFileSize if needed. It never shrinks the file: a node maps it, and
// reading a mapped page past the end of a file raises SIGBUS.
func openClockFile(path string) (*clockFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < clockFileSize {
		if err := f.Truncate(clockFileSize); err != nil {
			return nil, err
		}
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, clockFileSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	return &clockFile{mem: mem}, nil
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

// store writes the words (the seqlock's writer side; hold clockMu).
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
// runs on (shared by every process and container on the machine).
func monotonicNow() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

func updateClock(n Node, f func(w clockWords, now int64) clockWords) error {
	clockMu.Lock()
	defer clockMu.Unlock()
	c, err := openClockFile(filepath.Join(n.DataDir(), ClockFileName))
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

// SetClockOffset moves the node's realtime clock to real time + d, from now
// on (a running node sees the change on its next clock read). A drift set by
// SetClockDrift keeps running from d. It works on a stopped node too: the
// offset applies from its next start. The node must run with
// NodeSpec.ClockShim; its monotonic clock is never moved.
func SetClockOffset(n Node, d time.Duration) error {
	return updateClock(n, func(w clockWords, now int64) clockWords {
		return clockWords{offset: int64(d), drift: w.drift, epoch: now}
	})
}

// SetClockDrift makes the node's realtime clock gain perSecond (lose, if
// negative) for every second that passes, starting from its current offset.
// Zero stops the drift, keeping the offset reached.
func SetClockDrift(n Node, perSecond time.Duration) error {
	return updateClock(n, func(w clockWords, now int64) clockWords {
		return clockWords{offset: w.effective(now), drift: int64(perSecond), epoch: now}
	})
}

// ClockOffset is the node's current clock offset (zero if never set).
func ClockOffset(n Node) (time.Duration, error) {
	path := filepath.Join(n.DataDir(), ClockFileName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
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

// PowerLossFile is what a power loss did to one file.
type PowerLossFile struct {
	Path   string // relative to the node's data directory
	Before int64  // size in the page cache when the power went
	Kept   int64  // size on "disk": what the fsync log says was durable
	Lost   int64  // Before - Kept
	Synced bool   // whether any fsync of the file was recorded
}

// PowerLossReport says what a power loss cost a node.
type PowerLossReport struct {
	Node  string
	Files []PowerLossFile
	Lost  int64 // bytes, over all files
}

func (r PowerLossReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "power loss on %s: %d bytes lost", r.Node, r.Lost)
	for _, f := range r.Files {
		fmt.Fprintf(&b, "\n  %s: %d -> %d (lost %d, synced %v)", f.Path, f.Before, f.Kept, f.Lost, f.Synced)
	}
	return b.String()
}

// PowerLoss emulates pulling the plug on a node that runs with
// NodeSpec.ClockShim: it freezes and kills the node with every process it
// forked (an AOF rewrite or RDB child), then cuts each of the node's
// persistence files back to what the shim's fsync log says had been made
// durable, and leaves the node stopped; the caller calls n.Start.
//
// Why it is needed: SIGKILL alone loses nothing that redis wrote, because the
// written bytes sit in the kernel's page cache, which survives the process.
// Only data that was fsync'd survives the machine.
//
// The model, and where it departs from a real power loss:
//
//   - Files: the persistence files are those in the data directory and its
//     direct subdirectories (the AOF directory, appendonlydir unless
//     --appenddirname says otherwise) named *.aof, *.rdb or *.manifest, plus
//     any --dbfilename. Each keeps the size it had at its last recorded fsync
//     or fdatasync (the shim records the size just before the call), followed
//     through renames and truncations; a file never fsync'd is cut to zero
//     bytes.
//   - Worst case for data: every byte not fsync'd is lost. A real machine
//     may have written some of it back already (dirty pages are flushed
//     after about 30s), so a real crash can lose less, never more (given a
//     disk that honours flushes).
//   - Directory entries: creations, renames and unlinks are taken to be
//     durable as they stand at the crash. A real crash can also lose those
//     that were not followed by an fsync of their directory. For redis 7.0
//     this is close to exact: it fsyncs the AOF directory after every
//     manifest rename, and the data directory after renaming an RDB file
//     into place; an INCR file is created just before the manifest that names
//     it is renamed into place, so its entry is durable whenever the
//     manifest is, with the size of its last fdatasync (zero if none). A
//     never-synced file is kept empty rather than removed: a real crash
//     leaves it empty or absent, and empty is what redis' own recovery
//     expects of an INCR file the manifest names.
//   - A partially synced file is cut at a byte offset, which may split a
//     command: redis (aof-load-truncated yes, the default) drops the torn
//     tail of the last AOF file when it loads.
//
// Afterwards the fsync log is rewritten to record every surviving file as
// durable at its kept size: what is left is now the disk's content, and a
// later PowerLoss must not cut it again.
func PowerLoss(ctx context.Context, n Node) (PowerLossReport, error) {
	rep := PowerLossReport{Node: n.Spec().Name}
	if !n.Spec().ClockShim {
		return rep, fmt.Errorf("power loss on %s: the node does not run under the clock shim (NodeSpec.ClockShim), so nothing records what it fsync'd", rep.Node)
	}
	if err := killNodeTree(ctx, n); err != nil {
		return rep, fmt.Errorf("power loss on %s: %w", rep.Node, err)
	}

	dir, err := filepath.EvalSymlinks(n.DataDir()) // the shim logs paths as the kernel resolves them
	if err != nil {
		return rep, err
	}
	logPath := filepath.Join(dir, FsyncLogName)
	files, err := persistenceFiles(dir, n.Spec().Args)
	if err != nil {
		return rep, err
	}
	raw, err := os.ReadFile(logPath)
	if errors.Is(err, fs.ErrNotExist) && len(files) > 0 {
		// The shim creates the log when it starts: without one, nothing says
		// what was durable, and cutting everything to zero would be a lie.
		return rep, fmt.Errorf("power loss on %s: no fsync log %s (did the node run under the clock shim with this data directory?)", rep.Node, logPath)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return rep, err
	}
	durable := parseFsyncLog(raw)

	var baseline bytes.Buffer
	for _, rel := range files {
		path := filepath.Join(dir, rel)
		st, err := os.Stat(path)
		if err != nil {
			return rep, err
		}
		f := PowerLossFile{Path: rel, Before: st.Size()}
		if d, ok := durable[path]; ok {
			f.Synced = true
			f.Kept = min(d, f.Before)
		}
		f.Lost = f.Before - f.Kept
		if f.Lost > 0 {
			if err := os.Truncate(path, f.Kept); err != nil {
				return rep, err
			}
		}
		rep.Files = append(rep.Files, f)
		rep.Lost += f.Lost
		fmt.Fprintf(&baseline, "F %d %s\n", f.Kept, path)
	}
	if err := os.WriteFile(logPath, baseline.Bytes(), 0o644); err != nil {
		return rep, err
	}
	return rep, nil
}

// persistenceFiles lists, relative to dir, the files a power loss acts on.
func persistenceFiles(dir string, args []string) ([]string, error) {
	extra := map[string]bool{}
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--dbfilename" && args[i+1] != "" {
			extra[filepath.Base(args[i+1])] = true
		}
	}
	isPersistence := func(name string) bool {
		return extra[name] || strings.HasSuffix(name, ".aof") || strings.HasSuffix(name, ".rdb") || strings.HasSuffix(name, ".manifest")
	}
	var out []string
	top, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range top {
		switch {
		case e.Type().IsRegular() && isPersistence(e.Name()):
			out = append(out, e.Name())
		case e.IsDir():
			sub, err := os.ReadDir(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, err
			}
			for _, s := range sub {
				if s.Type().IsRegular() && isPersistence(s.Name()) {
					out = append(out, filepath.Join(e.Name(), s.Name()))
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// parseFsyncLog replays the shim's log (format in clockshim.c) into the
// durable size of each path. A torn last line (the writer was killed) is
// ignored.
func parseFsyncLog(raw []byte) map[string]int64 {
	durable := map[string]int64{}
	raw = raw[:bytes.LastIndexByte(raw, '\n')+1] // drop a torn last line
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 3 || line[1] != ' ' {
			continue
		}
		rest := line[2:]
		switch line[0] {
		case 'F', 'T':
			sizeStr, path, ok := strings.Cut(rest, " ")
			size, err := strconv.ParseInt(sizeStr, 10, 64)
			if !ok || err != nil {
				continue
			}
			d, had := durable[path]
			if line[0] == 'F' {
				// Synced up to size: sizes only grow between truncations,
				// and two syncs of one file may log out of order.
				durable[path] = max(d, size)
			} else if had && size < d {
				// Cut below what was durable: the cut part is gone.
				durable[path] = size
			}
		case 'R':
			oldPath, newPath, ok := strings.Cut(rest, "\t")
			if !ok {
				continue
			}
			if d, had := durable[oldPath]; had {
				durable[newPath] = d
			} else {
				delete(durable, newPath)
			}
			delete(durable, oldPath)
		case 'U':
			delete(durable, rest)
		}
	}
	return durable
}

// killNodeTree stops the node and every process it forked at once (SIGSTOP
// first, so nothing fsyncs or renames between the first kill and the last),
// then kills them all. n.Kill only reaches the server process; its children
// are found by the shim's environment variable, which they inherit.
func killNodeTree(ctx context.Context, n Node) error {
	marker := "LOCKFAULT_CLOCK_FILE=" + filepath.Join(n.DataDir(), ClockFileName)
	n.Signal(ctx, syscall.SIGSTOP) // fails only if the node is not running
	stopped := map[int]bool{}
	for round := 0; round < 3; round++ { // a fork may race the first scan
		found := false
		for _, pid := range processesWithEnv(marker) {
			if !stopped[pid] {
				syscall.Kill(pid, syscall.SIGSTOP)
				stopped[pid] = true
				found = true
			}
		}
		if !found && round > 0 {
			break
		}
	}
	for pid := range stopped {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := n.Kill(ctx); err != nil {
		return err
	}
	// Wait until every process is gone or a zombie (a zombie's environment
	// reads empty): only then is the fsync log final.
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := processesWithEnv(marker)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v of node %s survived SIGKILL", left, n.Spec().Name)
		}
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// processesWithEnv lists the processes whose environment holds entry (those
// this user can read).
func processesWithEnv(entry string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := []byte(entry)
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
