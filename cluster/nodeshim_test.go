package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockfault/lockfault/cluster/shimfile"
	"github.com/redis/go-redis/v9"
)

var (
	shimOnce sync.Once
	shimSkip string
	shimErr  error
)

// needShim makes sure the clock shim is built (by faults/clockshim/build.sh)
// and redis-server is installed, or skips the test.
func needShim(t *testing.T) {
	t.Helper()
	shimOnce.Do(func() {
		if _, err := exec.LookPath("redis-server"); err != nil {
			shimSkip = "redis-server not installed"
			return
		}
		if p := os.Getenv("LOCKFAULT_CLOCK_SHIM"); p != "" {
			if _, err := os.Stat(p); err != nil {
				shimErr = fmt.Errorf("LOCKFAULT_CLOCK_SHIM: %w", err)
			}
			return
		}
		cc := os.Getenv("CC")
		if cc == "" {
			cc = "gcc"
		}
		if _, err := exec.LookPath(cc); err != nil {
			if _, err := ClockShimPath(); err != nil {
				shimSkip = cc + " not found: cannot build faults/clockshim/libclockshim.so"
			}
			return
		}
		var script string
		for _, d := range ShimDirs() {
			if p := filepath.Join(d, "faults", "clockshim", "build.sh"); fileExists(p) {
				script = p
				break
			}
		}
		if script == "" {
			shimErr = errors.New("faults/clockshim/build.sh not found above the working directory")
			return
		}
		if out, err := exec.Command("sh", script).CombinedOutput(); err != nil {
			shimErr = fmt.Errorf("%s: %v\n%s", script, err, out)
		}
	})
	if shimSkip != "" {
		t.Skip(shimSkip)
	}
	if shimErr != nil {
		t.Fatal(shimErr)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// startShimNode starts one redis-server under the shim; everything it makes
// goes away when the test ends.
func startShimNode(t *testing.T, args ...string) (Node, *redis.Client) {
	t.Helper()
	needShim(t)
	ctx := context.Background()
	p, err := NewProcess("shimtest")
	if err != nil {
		t.Fatal(err)
	}
	var n Node
	t.Cleanup(func() {
		if t.Failed() && n != nil {
			if log, err := os.ReadFile(filepath.Join(n.DataDir(), "node.log")); err == nil {
				t.Logf("node.log:\n%s", Tail(log, 3000))
			}
			if log, err := os.ReadFile(filepath.Join(n.DataDir(), FsyncLogName)); err == nil {
				t.Logf("fsync.log:\n%s", Tail(log, 3000))
			}
		}
		if err := p.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	n, err = p.Start(ctx, NodeSpec{Name: "n1", Kind: KindRedis, ClockShim: true, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr(), Protocol: 2})
	t.Cleanup(func() { rdb.Close() })
	return n, rdb
}

// poll calls f every few milliseconds until it returns true or d passes.
func poll(d time.Duration, f func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if f() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

func TestClockShimStartsRedis(t *testing.T) {
	start := time.Now()
	n, rdb := startShimNode(t)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("redis-server took %v to start under the shim", d)
	}
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// The shim is really loaded, and it made its fsync log next to the
	// clock file.
	pid := serverPID(t, rdb)
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(maps), "libclockshim.so") {
		t.Fatal("libclockshim.so is not mapped into redis-server")
	}
	if !fileExists(filepath.Join(n.DataDir(), FsyncLogName)) {
		t.Fatal("the shim did not create fsync.log in the data directory")
	}
	if d, err := ClockOffset(n); err != nil || d != 0 {
		t.Fatalf("ClockOffset = %v, %v; want 0", d, err)
	}
}

func serverPID(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatal("no process_id in INFO server")
	return 0
}

// checkServerClock asserts that the node's TIME is the harness's time plus
// want, within tolerance.
func checkServerClock(t *testing.T, rdb *redis.Client, want, tolerance time.Duration) {
	t.Helper()
	st, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	got := st.Sub(time.Now())
	if got < want-tolerance || got > want+tolerance {
		t.Fatalf("server clock is %v off the harness's, want %v±%v", got, want, tolerance)
	}
}

func TestClockShimForwardJumpExpiresKeys(t *testing.T) {
	n, rdb := startShimNode(t, "--enable-debug-command", "yes")
	ctx := context.Background()
	// With active expiry off, only a lookup can expire a key.
	if err := rdb.Do(ctx, "DEBUG", "SET-ACTIVE-EXPIRE", "0").Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"lazy", "active"} {
		if err := rdb.Set(ctx, k, "v", 10*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.Set(ctx, "forever", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := SetClockOffset(n, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if d, err := ClockOffset(n); err != nil || d != 20*time.Second {
		t.Fatalf("ClockOffset = %v, %v; want 20s", d, err)
	}
	checkServerClock(t, rdb, 20*time.Second, time.Second)
	if size := rdb.DBSize(ctx).Val(); size != 3 {
		t.Fatalf("DBSIZE = %d before any lookup, want 3 (active expiry is off)", size)
	}
	// Lazy expiry: the lookup finds the key expired.
	if err := rdb.Get(ctx, "lazy").Err(); err != redis.Nil {
		t.Fatalf("GET lazy after +20s: err = %v, want redis.Nil", err)
	}
	if size := rdb.DBSize(ctx).Val(); size != 2 {
		t.Fatalf("DBSIZE = %d after the lookup, want 2", size)
	}
	// Active expiry: the key goes without being touched.
	if err := rdb.Do(ctx, "DEBUG", "SET-ACTIVE-EXPIRE", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if !poll(2*time.Second, func() bool { return rdb.DBSize(ctx).Val() == 1 }) {
		t.Fatalf("active expiry did not remove the key: DBSIZE = %d", rdb.DBSize(ctx).Val())
	}
	if v := rdb.Get(ctx, "forever").Val(); v != "v" {
		t.Fatalf("key without TTL: %q", v)
	}
}

func TestClockShimBackwardJump(t *testing.T) {
	n, rdb := startShimNode(t)
	ctx := context.Background()
	if err := rdb.Set(ctx, "before", "v", 3*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := SetClockOffset(n, -20*time.Second); err != nil {
		t.Fatal(err)
	}
	checkServerClock(t, rdb, -20*time.Second, time.Second)
	// Redis keeps absolute expiry times on the realtime clock: stepping it
	// back 20s gives a key set before the step 20s more to live.
	if ttl := rdb.PTTL(ctx, "before").Val(); ttl < 21*time.Second || ttl > 23*time.Second {
		t.Fatalf("PTTL of a 3s key after a -20s step = %v, want about 23s", ttl)
	}
	// A key set after the step expires on time, and active expiry (run by
	// serverCron, a timer on the monotonic clock) still runs: DBSIZE drops
	// without the key being touched.
	if err := rdb.Set(ctx, "after", "v", 500*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	set := time.Now()
	if !poll(3*time.Second, func() bool { return rdb.DBSize(ctx).Val() == 1 }) {
		t.Fatalf("a 500ms key set after a -20s step was not expired actively within 3s: DBSIZE = %d", rdb.DBSize(ctx).Val())
	}
	if d := time.Since(set); d < 450*time.Millisecond {
		t.Fatalf("the 500ms key went after %v", d)
	}
	if err := rdb.Get(ctx, "after").Err(); err != redis.Nil {
		t.Fatalf("GET after: %v, want redis.Nil", err)
	}
	if rdb.Exists(ctx, "before").Val() != 1 {
		t.Fatal("the key set before the step expired on its original schedule")
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}

// Redis 7.0 runs the appendfsync-everysec fsync when server.unixtime (the
// realtime clock) exceeds the second of the last fsync. Step the clock back
// and no fsync happens until the clock has caught up: every write
// acknowledged meanwhile is exposed to a power loss for that long.
func TestClockShimBackwardStepStallsEverysecFsync(t *testing.T) {
	n, rdb := startShimNode(t, "--appendonly", "yes", "--appendfsync", "everysec")
	ctx := context.Background()
	before := incrSyncs(t, n)
	if err := rdb.Set(ctx, "synced", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if !poll(3*time.Second, func() bool { return incrSyncs(t, n) > before }) {
		t.Fatal("no fsync of the INCR file within 3s under appendfsync everysec")
	}
	if err := SetClockOffset(n, -3*time.Second); err != nil {
		t.Fatal(err)
	}
	synced := incrSyncs(t, n)
	const writes = 100
	for i := 0; i < writes; i++ { // 2s of acknowledged writes
		if err := rdb.Set(ctx, "w:"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := incrSyncs(t, n); got != synced {
		t.Fatalf("%d fsyncs in the 2s after a -3s step, want none", got-synced)
	}
	rep, err := PowerLoss(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if k := survivors(t, rdb, "w:", writes); k != 0 {
		t.Fatalf("%d of the writes after the step survived, want none", k)
	}
	if rdb.Exists(ctx, "synced").Val() != 1 {
		t.Fatal("the write fsync'd before the step was lost")
	}
}

func TestClockShimDrift(t *testing.T) {
	n, rdb := startShimNode(t)
	if err := SetClockOffset(n, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := SetClockDrift(n, 500*time.Millisecond); err != nil { // 1.5 node seconds per second
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	checkServerClock(t, rdb, 2500*time.Millisecond, 200*time.Millisecond)
	if err := SetClockDrift(n, 0); err != nil {
		t.Fatal(err)
	}
	d, err := ClockOffset(n)
	if err != nil || d < 2400*time.Millisecond || d > 2700*time.Millisecond {
		t.Fatalf("ClockOffset after 1s at +500ms/s from 2s = %v, %v", d, err)
	}
	time.Sleep(300 * time.Millisecond)
	if d2, _ := ClockOffset(n); d2 != d {
		t.Fatalf("the offset kept moving after the drift stopped: %v then %v", d, d2)
	}
	checkServerClock(t, rdb, d, 100*time.Millisecond)
}

// The node never sees a half-written offset: flip it between +100s and
// -100s (with drift) as fast as possible while reading TIME.
func TestClockShimOffsetUpdatesAreAtomic(t *testing.T) {
	n, rdb := startShimNode(t)
	ctx := context.Background()
	stop := make(chan struct{})
	done := make(chan error, 1)
	flips := 0
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			d := 100 * time.Second
			if i%2 == 1 {
				d = -d
			}
			if err := SetClockOffset(n, d); err != nil {
				done <- err
				return
			}
			if err := SetClockDrift(n, time.Duration(i%3)*time.Millisecond); err != nil {
				done <- err
				return
			}
			flips++
		}
	}()
	reads := 0
	for end := time.Now().Add(time.Second); time.Now().Before(end); reads++ {
		st, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		off := st.Sub(time.Now())
		if off.Abs() < 99*time.Second || off.Abs() > 101*time.Second {
			t.Fatalf("read %d: the node's clock was %v off, want ±100s", reads, off)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d TIME reads across %d offset changes", reads, flips)
}

// incrSyncs counts the fsyncs of INCR AOF files recorded in the node's log.
func incrSyncs(t *testing.T, n Node) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(n.DataDir(), FsyncLogName))
	if err != nil {
		t.Fatal(err)
	}
	c := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "F ") && strings.HasSuffix(line, ".incr.aof") {
			c++
		}
	}
	return c
}

// writeInFsyncWindow writes one acknowledged key, waits until the bio thread
// has fdatasync'd it, then writes a pipelined burst of acknowledged SETs
// (burst:<attempt>:<i> = i) and calls crash, all before the next
// appendfsync-everysec fsync can run. Redis fsyncs at most once per second of
// its (realtime) clock, when the second changes, so the burst must start in
// the same second as the fsync it follows and end well before the next one;
// if the timing misses, it tries again. It returns the attempt's prefix.
func writeInFsyncWindow(t *testing.T, n Node, rdb *redis.Client, burst int, crash func()) (warm, prefix string) {
	t.Helper()
	ctx := context.Background()
	for attempt := 0; attempt < 10; attempt++ {
		// Start early in a second: the fsync of the warm key then lands in
		// this second or right at the start of the next.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 20*time.Millisecond)))
		before := incrSyncs(t, n)
		warm = fmt.Sprintf("warm:%d", attempt)
		if err := rdb.Set(ctx, warm, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if !poll(3*time.Second, func() bool { return incrSyncs(t, n) > before }) {
			t.Fatal("no fsync of the INCR file within 3s under appendfsync everysec")
		}
		// The shim logs the fdatasync when it returns; the bio job ends a
		// moment later. A burst written while Redis still counts the job as
		// pending is not written at all (flushAppendOnlyFile postpones the
		// write, and the replies go out anyway), so wait for the job to end.
		if !poll(time.Second, func() bool { return persistenceField(t, rdb, "aof_pending_bio_fsync") == "0" }) {
			t.Fatal("the bio fsync job did not end within 1s")
		}
		synced := time.Now()
		if frac := synced.Sub(synced.Truncate(time.Second)); frac < 10*time.Millisecond || frac > 600*time.Millisecond {
			continue // the fsync may belong to the previous second, or the window is short
		}
		prefix = fmt.Sprintf("burst:%d:", attempt)
		pipe := rdb.Pipeline()
		for i := 0; i < burst; i++ {
			pipe.Set(ctx, prefix+strconv.Itoa(i), i, 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if time.Now().Truncate(time.Second) != synced.Truncate(time.Second) ||
			time.Until(synced.Truncate(time.Second).Add(time.Second)) < 150*time.Millisecond {
			t.Logf("attempt %d: burst too slow (%v), retrying", attempt, time.Since(synced))
			continue
		}
		if buf := persistenceField(t, rdb, "aof_buffer_length"); buf != "0" {
			t.Logf("attempt %d: the burst is still in Redis's AOF buffer (%s bytes: its write was postponed), retrying", attempt, buf)
			continue
		}
		crash()
		t.Logf("attempt %d: fsync observed, burst of %d acknowledged and crashed %v later", attempt, burst, time.Since(synced))
		return warm, prefix
	}
	t.Fatal("could not write a burst inside one fsync window in 10 attempts")
	return "", ""
}

// persistenceField returns one field of INFO persistence ("" if absent).
func persistenceField(t *testing.T, rdb *redis.Client, field string) string {
	t.Helper()
	info, err := rdb.Info(context.Background(), "persistence").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// survivors returns how many of prefix0..prefix<burst-1> exist, failing the
// test unless they are a prefix of the burst with the right values.
func survivors(t *testing.T, rdb *redis.Client, prefix string, burst int) int {
	t.Helper()
	keys := make([]string, burst)
	for i := range keys {
		keys[i] = prefix + strconv.Itoa(i)
	}
	vals, err := rdb.MGet(context.Background(), keys...).Result()
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	for k < burst && vals[k] != nil {
		if vals[k] != strconv.Itoa(k) {
			t.Fatalf("%s = %v, want %d", keys[k], vals[k], k)
		}
		k++
	}
	for i := k; i < burst; i++ {
		if vals[i] != nil {
			t.Fatalf("survivors are not a prefix: %s is missing but %s survived", keys[k], keys[i])
		}
	}
	return k
}

func TestPowerLossAppendfsyncAlways(t *testing.T) {
	n, rdb := startShimNode(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	incr := func(times int) {
		for i := 0; i < times; i++ {
			if err := rdb.Incr(ctx, "counter").Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	incr(100)
	// A rewrite in the middle: its base file is fsync'd by the child under a
	// temporary name and renamed twice, which the log must follow.
	if err := rdb.BgRewriteAOF(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if !poll(10*time.Second, func() bool {
		info := rdb.Info(ctx, "persistence").Val()
		return strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrite_scheduled:0") &&
			strings.Contains(info, "aof_last_bgrewrite_status:ok")
	}) {
		t.Fatal("BGREWRITEAOF did not finish")
	}
	incr(100)
	powerCycle := func(want int) {
		t.Helper()
		rep, err := PowerLoss(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(rep)
		if rep.Lost != 0 {
			t.Errorf("appendfsync always lost %d bytes", rep.Lost)
		}
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if v, err := rdb.Get(ctx, "counter").Int(); err != nil || v != want {
			t.Fatalf("after power loss counter = %d, %v; want %d (every INCR was acknowledged)", v, err, want)
		}
	}
	powerCycle(200)
	// Twice: what survived the first loss is durable now.
	incr(100)
	powerCycle(300)
}

func TestPowerLossAppendfsyncEverysec(t *testing.T) {
	n, rdb := startShimNode(t, "--appendonly", "yes", "--appendfsync", "everysec")
	ctx := context.Background()
	const burst = 1000
	var rep PowerLossReport
	warm, prefix := writeInFsyncWindow(t, n, rdb, burst, func() {
		var err error
		if rep, err = PowerLoss(ctx, n); err != nil {
			t.Fatal(err)
		}
	})
	t.Log(rep)
	if rep.Lost == 0 {
		t.Fatal("PowerLoss cut nothing")
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, warm).Val() != 1 {
		t.Fatalf("%s, fsync'd before the crash, was lost", warm)
	}
	k := survivors(t, rdb, prefix, burst)
	t.Logf("%d of %d acknowledged writes survived", k, burst)
	if k == burst {
		t.Fatal("no acknowledged write was lost inside the everysec window")
	}
}

func TestPowerLossAppendonlyNo(t *testing.T) {
	n, rdb := startShimNode(t)
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		if err := rdb.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := PowerLoss(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) != 0 {
		t.Fatalf("no persistence, yet PowerLoss saw files: %v", rep)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if size := rdb.DBSize(ctx).Val(); size != 0 {
		t.Fatalf("DBSIZE after power loss without persistence = %d, want 0", size)
	}
}

func TestPowerLossKeepsSavedRDB(t *testing.T) {
	n, rdb := startShimNode(t)
	ctx := context.Background()
	if err := rdb.Set(ctx, "saved", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// SAVE writes temp-<pid>.rdb, fsyncs it and renames it to dump.rdb.
	if err := rdb.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "unsaved", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rep, err := PowerLoss(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if len(rep.Files) != 1 || rep.Files[0].Path != "dump.rdb" || !rep.Files[0].Synced || rep.Lost != 0 {
		t.Fatalf("want dump.rdb synced and intact, got %v", rep)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, "saved").Val() != 1 || rdb.Exists(ctx, "unsaved").Val() != 0 {
		t.Fatalf("after power loss: saved=%d unsaved=%d, want 1 and 0",
			rdb.Exists(ctx, "saved").Val(), rdb.Exists(ctx, "unsaved").Val())
	}
}

// A plain SIGKILL loses nothing redis wrote, fsync'd or not: the page cache
// outlives the process. This is why PowerLoss has to cut files itself.
func TestKillLosesNothingUnderEverysec(t *testing.T) {
	n, rdb := startShimNode(t, "--appendonly", "yes", "--appendfsync", "everysec")
	ctx := context.Background()
	const burst = 1000
	_, prefix := writeInFsyncWindow(t, n, rdb, burst, func() {
		if err := n.Kill(ctx); err != nil {
			t.Fatal(err)
		}
	})
	// The burst was not fsync'd when the process died...
	dir, err := filepath.EvalSymlinks(n.DataDir())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, FsyncLogName))
	if err != nil {
		t.Fatal(err)
	}
	unsynced := int64(0)
	for path, size := range shimfile.ParseFsyncLog(raw) {
		if st, err := os.Stat(path); err == nil && strings.HasSuffix(path, ".incr.aof") {
			unsynced += st.Size() - size
		}
	}
	if unsynced <= 0 {
		t.Fatal("the burst was fsync'd before the kill: the test proves nothing")
	}
	// ...and yet all of it is there after a restart.
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if k := survivors(t, rdb, prefix, burst); k != burst {
		t.Fatalf("kill -9 lost acknowledged writes: %d of %d survived", k, burst)
	}
	t.Logf("kill -9 with %d unsynced bytes in the AOF lost nothing", unsynced)
}
