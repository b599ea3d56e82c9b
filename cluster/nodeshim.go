package cluster

// The harness side of faults/clockshim, the LD_PRELOAD library a node runs
// under when NodeSpec.ClockShim is set: moving the node's realtime clock,
// and emulating a power loss from the shim's log of what was fsync'd. The
// files themselves are read and written by package shimfile: here on the
// harness's file system, or by lockfault-nodectl beside the node when its
// files are elsewhere (a remote Docker daemon, see remoteShim).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/lockfault/lockfault/cluster/shimfile"
)

// Files the shim uses in a node's data directory. The backends point
// LOCKFAULT_CLOCK_FILE at ClockFileName; the shim derives the fsync log's
// path from its directory.
const (
	ClockFileName = shimfile.ClockFileName
	FsyncLogName  = shimfile.FsyncLogName
)

// What a power loss did to one file, and to a node.
type (
	PowerLossFile   = shimfile.File
	PowerLossReport = shimfile.Report
)

// RemoteShim is implemented by nodes whose data directory is not on the
// harness's file system (the Docker backend with a remote daemon): the shim's
// files are handled by lockfault-nodectl run beside them, and the node's
// processes are frozen and killed through the daemon.
type RemoteShim interface {
	// Nodectl runs lockfault-Nodectl with args where the node's data
	// directory is, and returns its output.
	Nodectl(ctx context.Context, args ...string) ([]byte, error)
	// FreezeKill freezes the node with every process it forked, at once,
	// then kills them all and waits until they are gone; frozen runs
	// meanwhile, from the moment they are frozen (their files are final).
	FreezeKill(ctx context.Context, frozen func() error) error
}

// nodectlLimit bounds one clock change on a remote node.
const nodectlLimit = 30 * time.Second

func clockPath(n Node) string { return filepath.Join(n.DataDir(), ClockFileName) }

// SetClockOffset moves the node's realtime clock to real time + d, from now
// on (a running node sees the change on its next clock read). A drift set by
// SetClockDrift keeps running from d. It works on a stopped node too: the
// offset applies from its next start. The node must run with
// NodeSpec.ClockShim; its monotonic clock is never moved.
func SetClockOffset(n Node, d time.Duration) error {
	if r, ok := n.(RemoteShim); ok {
		return remoteClock(r, "clock-offset", clockPath(n), d)
	}
	return shimfile.SetOffset(clockPath(n), d)
}

// SetClockDrift makes the node's realtime clock gain perSecond (lose, if
// negative) for every second that passes, starting from its current offset.
// Zero stops the drift, keeping the offset reached.
func SetClockDrift(n Node, perSecond time.Duration) error {
	if r, ok := n.(RemoteShim); ok {
		return remoteClock(r, "clock-drift", clockPath(n), perSecond)
	}
	return shimfile.SetDrift(clockPath(n), perSecond)
}

func remoteClock(r RemoteShim, cmd, path string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), nodectlLimit)
	defer cancel()
	_, err := r.Nodectl(ctx, cmd, path, strconv.FormatInt(d.Nanoseconds(), 10))
	return err
}

// ClockOffset is the node's current clock offset (zero if never set).
func ClockOffset(n Node) (time.Duration, error) {
	if r, ok := n.(RemoteShim); ok {
		ctx, cancel := context.WithTimeout(context.Background(), nodectlLimit)
		defer cancel()
		out, err := r.Nodectl(ctx, "clock-get", clockPath(n))
		if err != nil {
			return 0, err
		}
		ns, err := strconv.ParseInt(string(bytes.TrimSpace(out)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("lockfault-nodectl clock-get: %q: %w", out, err)
		}
		return time.Duration(ns), nil
	}
	return shimfile.Offset(clockPath(n))
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
	name := n.Spec().Name
	rep := PowerLossReport{Node: name}
	if !n.Spec().ClockShim {
		return rep, fmt.Errorf("power loss on %s: the node does not run under the clock shim (NodeSpec.ClockShim), so nothing records what it fsync'd", name)
	}
	var err error
	if r, ok := n.(RemoteShim); ok {
		rep, err = remotePowerLoss(ctx, r, n)
	} else {
		if err := killNodeTree(ctx, n); err != nil {
			return rep, fmt.Errorf("power loss on %s: %w", name, err)
		}
		rep, err = shimfile.CutToDurable(n.DataDir(), n.Spec().Args)
	}
	rep.Node = name
	if err != nil {
		return rep, fmt.Errorf("power loss on %s: %w", name, err)
	}
	return rep, nil
}

// remotePowerLoss is PowerLoss on a node whose files are on a remote
// daemon's host.
func remotePowerLoss(ctx context.Context, r RemoteShim, n Node) (PowerLossReport, error) {
	var rep PowerLossReport
	args := []string{"power-loss", n.DataDir()}
	if db := dbfilename(n.Spec().Args); db != "" {
		args = append(args, "--dbfilename", db)
	}
	var out []byte
	// The files are cut while the node is frozen and being killed: a kill
	// through the daemon takes as long as the cut, and a faster power loss
	// leaves the fault's timing closer to the other backends'.
	err := r.FreezeKill(ctx, func() error {
		var err error
		out, err = r.Nodectl(ctx, args...)
		return err
	})
	if err != nil {
		return rep, err
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return rep, fmt.Errorf("lockfault-nodectl power-loss: %w: %q", err, out)
	}
	return rep, nil
}

// dbfilename is the last --dbfilename among a node's arguments ("" if none).
func dbfilename(args []string) string {
	db := ""
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--dbfilename" {
			db = args[i+1]
		}
	}
	return db
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
