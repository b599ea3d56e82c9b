package runner

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockfault/lockfault/internal/cgroup"
)

// script writes an sh script into a temp dir and returns its command and
// the dir (the script sees it as $D).
func script(t *testing.T, body string) ([]string, string) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "worker.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nD='"+dir+"'\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"/bin/sh", p}, dir
}

// gone fails the test if a pid recorded by a script still runs.
func gone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the script did not record its pid: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	gonePid(t, pid, filepath.Base(pidFile))
}

// goneAll checks every pid of a file with one per line.
func goneAll(t *testing.T, pidFile string) {
	t.Helper()
	b, _ := os.ReadFile(pidFile)
	for _, f := range strings.Fields(string(b)) {
		pid, _ := strconv.Atoi(f)
		gonePid(t, pid, f)
	}
}

func gonePid(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); strings.Contains(string(st), ") Z ") {
			return // a zombie of a reaped group is gone for our purpose
		}
		if time.Now().After(deadline) {
			t.Errorf("process %d (%s) still runs", pid, what)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Each bad worker gets a clear error naming the worker (client and
// command) and, for a bad line, its stdout line number and text; nothing
// it started is left running.
func TestBadWorkersAreRefusedClearly(t *testing.T) {
	const ready = `{"type":"ready","pid":1,"lock":"x","needs":"single"}`
	cases := []struct {
		name string
		body string // sh script; $D is its dir
		want []string
	}{
		{"never says ready", `echo $$ > "$D/pid"; sleep 60 & echo $! > "$D/child"; wait`,
			[]string{"no ready within"}},
		{"writes garbage", `echo $$ > "$D/pid"; read l; echo "hello, I am not JSON"; sleep 60`,
			[]string{"stdout:1:", `"hello, I am not JSON"`}},
		{"crashes at start", `echo $$ > "$D/pid"; echo "ImportError: no module named redis" >&2; exit 3`,
			[]string{"exited before ready", "exit status 3", "ImportError: no module named redis"}},
		{"garbage, then crash", `echo $$ > "$D/pid"; echo '{"type":"ready"'; exit 1`,
			[]string{"stdout:1:", `{\"type\":\"ready\"`}},
		{"a reply before ready", `echo $$ > "$D/pid"; read l; echo '{"type":"reply","op":1,"status":"ok"}'; sleep 60`,
			[]string{"stdout:1:", "reply before ready"}},
		{"ready with unknown needs", `echo $$ > "$D/pid"; read l; echo '{"type":"ready","lock":"x","needs":"quorum"}'; sleep 60`,
			[]string{"field needs", `"quorum"`}},
		{"unknown key in ready", `echo $$ > "$D/pid"; read l; echo '{"type":"ready","lock":"x","needs":"single","Lock":"y"}'; sleep 60`,
			[]string{"stdout:1:", "field Lock: unknown key"}},
		{"trailing data", `echo $$ > "$D/pid"; read l; echo '` + ready + ` {}'; sleep 60`,
			[]string{"stdout:1:", "data after the JSON object"}},
		{"over-long line", `echo $$ > "$D/pid"; read l; head -c 1100000 /dev/zero | tr '\0' x; echo; sleep 60`,
			[]string{"stdout:1:", "line longer than 1048576 bytes"}},
		{"refuses init", `echo $$ > "$D/pid"; read l; echo '{"type":"error","line":1,"code":"not-supported","error":"stdin:1: field lock: not mine"}'; sleep 60`,
			[]string{"init refused", "not mine", "not-supported"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cmd, dir := script(t, c.body)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			_, err := Describe(ctx, cmd, "")
			if err == nil {
				t.Fatal("Describe accepted a bad worker")
			}
			msg := err.Error()
			for _, w := range append([]string{"worker describe (/bin/sh "}, c.want...) {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("took %v: the wait is not bounded", d)
			}
			gone(t, filepath.Join(dir, "pid"))
			if c.name == "never says ready" {
				gone(t, filepath.Join(dir, "child"))
			}
		})
	}
}

func TestUnknownWorkerCommand(t *testing.T) {
	_, err := Describe(context.Background(), []string{"/nonexistent/lockfault-worker", "--flag"}, "")
	if err == nil || !strings.Contains(err.Error(), "worker describe (/nonexistent/lockfault-worker --flag): cannot start") {
		t.Fatalf("got %v", err)
	}
}

// A worker that answers ready but ignores shutdown is killed, children
// included, and what it declared is returned.
func TestDescribeEndsAWorkerThatIgnoresShutdown(t *testing.T) {
	cmd, dir := script(t, `echo $$ > "$D/pid"; sleep 60 & echo $! > "$D/child"
read l; echo '{"type":"ready","pid":1,"lock":"mine","needs":"masters","caps":["extend","fencing"],"failpoints":["a","b"]}'
trap '' TERM; while :; do sleep 1; done`)
	info, err := Describe(context.Background(), cmd, "")
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "mine" || info.Needs != "masters" || !info.Has("fencing") || len(info.Failpoints) != 2 {
		t.Errorf("declared %+v", info)
	}
	gone(t, filepath.Join(dir, "pid"))
	gone(t, filepath.Join(dir, "child"))
}

// Describe of the built-in worker is the registration plus the worker's own
// failpoints; asking for a lock the worker does not have is refused.
func TestDescribeBuiltinWorker(t *testing.T) {
	info, err := Describe(context.Background(), nil, "redlock")
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "redlock" || info.Needs != "masters" || !strings.Contains(strings.Join(info.Failpoints, " "), "cs-after-read") {
		t.Errorf("declared %+v", info)
	}
	if _, err := Describe(context.Background(), nil, "nonesuch"); err == nil || !strings.Contains(err.Error(), "unknown lock") {
		t.Errorf("unknown lock: %v", err)
	}
}

// A worker's descendant that leaves the worker's process group (setsid) is
// still stopped when the run ends: it stays in the worker's cgroup.
func TestWorkerDescendantOutsideTheGroupIsStopped(t *testing.T) {
	if _, err := cgroup.Root(); err != nil {
		t.Skipf("no writable cgroup v2 here (%v): workers are tracked by process group only", err)
	}
	cmd, dir := script(t, `setsid sleep 300 </dev/null >/dev/null 2>&1 &
echo $! >> "$D/pids"
exec /usr/bin/python3 `+filepath.Join(mustAbs(t, "testdata"), "liar.py")+` honest`)
	out, err := Run(context.Background(), externalPlan(t, cmd, "standalone-control", 1), Options{Backend: "process", ReportsDir: t.TempDir()})
	if err != nil {
		t.Fatalf("run: %v (%v)", err, out)
	}
	goneAll(t, filepath.Join(dir, "pids"))
	if left, _ := filepath.Glob(filepath.Join(mustRoot(t), cgroup.Prefix+"*"+out.Meta.RunID+"*")); len(left) > 0 {
		t.Errorf("cgroups left behind: %v", left)
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustRoot(t *testing.T) string {
	r, err := cgroup.Root()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A worker's death is seen only once every line it wrote before dying has
// been dispatched: a crash failpoint's "fired", sent just before the crash,
// must reach the history before the "crashed" note, or the planned crash
// reads as the lock's process dying on its own. The worker here writes
// 30,000 lines into the pipe at once and exits; its reader is still on
// them when the process is reaped.
func TestDeathWaitsForTheWorkersLastLines(t *testing.T) {
	cmd, _ := script(t, `yes x | head -n 30000; exit 0`)
	for i := 0; i < 3; i++ {
		p, err := spawn(cmd, "c1", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		<-p.dead
		select {
		case <-p.readerDone:
		default:
			t.Errorf("try %d: the worker's death was seen before its last lines were read", i+1)
		}
		p.kill()
	}
}
