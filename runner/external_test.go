package runner

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/worker"
)

// redisPy is the command of the redis-py example worker (Debian's
// python3-redis, imported by /usr/bin/python3).
func redisPy(t *testing.T) []string {
	t.Helper()
	if out, err := exec.Command("/usr/bin/python3", "-c", "import redis.lock").CombinedOutput(); err != nil {
		t.Fatalf("the redis-py worker needs /usr/bin/python3 with redis-py (Debian: apt-get install python3-redis): %v: %s", err, out)
	}
	return []string{"/usr/bin/python3", filepath.Join("..", "examples", "python-redis", "worker.py")}
}

// runExternal runs a built-in scenario with an external worker, the way
// `simulate run -worker` does: Describe, then Prepare and Run with the
// declared lock.
func runExternal(t *testing.T, command []string, scenario string, cycles int) (*Outcome, []history.Event) {
	t.Helper()
	subj, err := External(context.Background(), command, "")
	if err != nil {
		t.Fatal(err)
	}
	info := subj.Info
	opt := Options{Backend: "process", ReportsDir: t.TempDir()}
	sc, err := Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), plan(t, sc, &subj, Overrides{Cycles: cycles}), opt)
	if err != nil {
		t.Fatalf("%s: %v", scenario, err)
	}
	evs, err := history.Read(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s with %s: verdict %s, observed %v, %d grants", scenario, info.Name, out.Result.Verdict, out.Result.Observed, out.Result.Stats.Grants)
	assertNoLeftovers(t, out.Meta.RunID)
	return out, evs
}

func notes(evs []history.Event, op string) []history.Event {
	var out []history.Event
	for _, e := range evs {
		if e.Kind == history.Note && e.Op == op {
			out = append(out, e)
		}
	}
	return out
}

// redis-py's Lock through the protocol: safe without faults; under a pause
// past its lease, overlap and a lost update, exactly like `single`.
func TestRedisPyWorker(t *testing.T) {
	cmd := redisPy(t)
	t.Run("standalone-control", func(t *testing.T) {
		out, _ := runExternal(t, cmd, "standalone-control", 2)
		if out.Meta.Lock != "redis-py" || !out.Meta.Matched || out.Result.Verdict != checker.ClassSafe || out.Result.Stats.Grants == 0 {
			t.Fatalf("lock %s, verdict %s (observed %v), %d grants: want redis-py, safe, grants: %s",
				out.Meta.Lock, out.Result.Verdict, out.Result.Observed, out.Result.Stats.Grants, out.Meta.Why)
		}
	})
	t.Run("gc-pause", func(t *testing.T) {
		out, evs := runExternal(t, cmd, "gc-pause", 2)
		if !out.Meta.Matched {
			t.Fatalf("verdict %s (observed %v): %s", out.Result.Verdict, out.Result.Observed, out.Meta.Why)
		}
		for _, c := range []string{checker.ClassOverlap, checker.ClassCorruption} {
			if n, cycles := out.Result.Rate(c); n != cycles {
				t.Errorf("%s in %d of %d cycles, want every cycle", c, n, cycles)
			}
		}
		if len(notes(evs, "not-exercised")) != 0 {
			t.Errorf("not-exercised notes in a scenario the worker supports: %+v", notes(evs, "not-exercised"))
		}
	})
	t.Run("unsupported failpoint", func(t *testing.T) {
		// setnx-crash arms after-setnx, which redis-py's Lock never hits:
		// the worker says so and the harness records not-exercised.
		out, evs := runExternal(t, cmd, "setnx-crash", 1)
		if out.Meta.Error != "" {
			t.Fatalf("harness error: %s", out.Meta.Error)
		}
		ne := notes(evs, "not-exercised")
		if len(ne) == 0 {
			t.Fatal("no not-exercised note")
		}
		for _, e := range ne {
			if e.Process == "" || !strings.Contains(e.Detail, "failpoint after-setnx crash") || !strings.Contains(e.Detail, "not-supported") && !strings.Contains(e.Detail, "cannot hit") {
				t.Errorf("note %+v", e)
			}
		}
		if f := notes(evs, "failpoint-fired"); len(f) != 0 {
			t.Errorf("an unsupported failpoint fired: %+v", f)
		}
	})
}

// The declared needs are checked against the topology before anything
// starts.
func TestExternalWorkerNeedsFitTopology(t *testing.T) {
	cmd, _ := script(t, `read l; echo '{"type":"ready","pid":1,"lock":"my-etcd-lock","needs":"etcd"}'; read l`)
	subj, err := External(context.Background(), cmd, "")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Load("standalone-control")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Prepare(context.Background(), sc, &subj, Overrides{})
	if err == nil || !strings.Contains(err.Error(), "topology.kind") || !strings.Contains(err.Error(), "my-etcd-lock needs etcd") {
		t.Fatalf("got %v", err)
	}
}

// A worker that describes itself but breaks the protocol when a run starts
// it: the run fails (exit 2) with the worker's name and the line, and
// nothing is left running.
func TestExternalWorkerFailingInARun(t *testing.T) {
	cmd, dir := script(t, `echo $$ >> "$D/pids"
read l
case "$l" in
*endpoints*) echo "Traceback (most recent call last): oops" ;;
*) echo '{"type":"ready","pid":1,"lock":"mine","needs":"single"}' ;;
esac
sleep 60`)
	opt := Options{Backend: "process", ReportsDir: t.TempDir()}
	out, err := Run(context.Background(), externalPlan(t, cmd, "standalone-control", 0), opt)
	if err == nil || Code(out, err) != ExitHarness {
		t.Fatalf("exit %d, error %v: want exit 2", Code(out, err), err)
	}
	for _, w := range []string{"worker c1 (/bin/sh ", "stdout:1:", "Traceback (most recent call last): oops"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	assertNoLeftovers(t, out.Meta.RunID)
	pids, _ := filepath.Glob(filepath.Join(dir, "pids"))
	if len(pids) != 1 {
		t.Fatal("the worker never ran")
	}
	goneAll(t, pids[0])
}

// The redis-py worker holds to the same strict rules as the built-in one.
func TestRedisPyWorkerIsStrict(t *testing.T) {
	cmd := exec.Command(redisPy(t)[0], redisPy(t)[1:]...)
	in, _ := cmd.StdinPipe()
	outR, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<21)
	n := 0
	exchange := func(line string) worker.Message {
		t.Helper()
		n++
		fmt.Fprintln(in, line)
		if !sc.Scan() {
			t.Fatalf("line %d %s: no answer (%v)", n, line, sc.Err())
		}
		m, err := worker.DecodeMessage(sc.Bytes())
		if err != nil {
			t.Fatalf("line %d %s: the worker wrote an invalid message %s: %v", n, line, sc.Bytes(), err)
		}
		return m
	}
	if m := exchange(`{"cmd":"acquire","op":1,"key":"k","ttl_ms":5}`); m.Code != worker.CodeMalformed || m.Op != 1 || !strings.Contains(m.Error, "before init") {
		t.Errorf("acquire before init: %+v", m)
	}
	if m := exchange(`{"cmd":"init","client":"c1","lock":"single"}`); m.Code != worker.CodeNotSupported {
		t.Errorf("init with another lock: %+v", m)
	}
	if m := exchange(`{"cmd":"endpoints","endpoints":{"primary":"127.0.0.1:1"}}`); !strings.Contains(m.Error, "after a failed init") {
		t.Errorf("endpoints after a failed init: %+v", m)
	}
	cmd.Process.Kill()
	cmd.Wait()

	cmd = exec.Command(redisPy(t)[0], redisPy(t)[1:]...)
	in, _ = cmd.StdinPipe()
	outR, _ = cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc = bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<21)
	n = 0
	if m := exchange(`{"cmd":"init","client":"c1","options":{"colour":"red"}}`); m.Code != worker.CodeNotSupported || !strings.Contains(m.Error, "colour") {
		t.Errorf("unknown option: %+v", m)
	}
	cmd.Process.Kill()
	cmd.Wait()

	cmd = exec.Command(redisPy(t)[0], redisPy(t)[1:]...)
	in, _ = cmd.StdinPipe()
	outR, _ = cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc = bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<21)
	n = 0
	m := exchange(`{"cmd":"init","client":"c1","resource":"127.0.0.1:1"}`)
	if m.Type != "ready" || worker.ValidateReady(m) != nil || m.Lock != "redis-py" || m.Needs != "single" {
		t.Fatalf("describe: %+v", m)
	}
	for _, c := range []struct{ line, code, want string }{
		{`{"cmd":"clock"}{"cmd":"shutdown"}`, worker.CodeMalformed, "data after the JSON object"},
		{`{"CMD":"clock"}`, worker.CodeMalformed, "field cmd: missing"},
		{`{"cmd":"clock","Offset_ms":5}`, worker.CodeMalformed, "field Offset_ms: unknown key"},
		{`{"cmd":"cs","op":1,"lease":"L","ttl_ms":5}`, worker.CodeMalformed, "field ttl_ms: unknown key"},
		{`{"cmd":"clock","offset_ms":1,"offset_ms":2}`, worker.CodeMalformed, "given twice"},
		{`{"cmd":"clock","offset_ms":null}`, worker.CodeMalformed, "null is not allowed"},
		{`["clock"]`, worker.CodeMalformed, "not a JSON object"},
		{`{"cmd":"fly"}`, worker.CodeNotSupported, "unknown command"},
		{`{"cmd":"release","op":-1,"lease":"L"}`, worker.CodeMalformed, "field op"},
		{`{"cmd":"release","op":9007199254740992,"lease":"L"}`, worker.CodeMalformed, "field op"},
		{`{"cmd":"release","op":1.5,"lease":"L"}`, worker.CodeMalformed, "field op"},
		{`{"cmd":"release","op":true,"lease":"L"}`, worker.CodeMalformed, "field op"},
		{`{"cmd":"acquire","op":2,"key":"k","ttl_ms":0}`, worker.CodeMalformed, "ttl_ms"},
		{`{"cmd":"acquire","op":3,"key":"k","ttl_ms":5,"wait_ms":-1}`, worker.CodeMalformed, "wait_ms"},
		{`{"cmd":"failpoint","name":"cs-after-read","action":"crash","count":-1}`, worker.CodeMalformed, "count"},
		{`{"cmd":"failpoint","name":"cs-after-read","action":"sleep","ms":-5}`, worker.CodeMalformed, "field ms"},
		{`{"cmd":"failpoint","name":"cs-after-read","action":"explode"}`, worker.CodeMalformed, "allowed: crash, sleep, stop, off"},
		{`{"cmd":"clock","offset_ms":9223372036854775}`, worker.CodeMalformed, "offset_ms"},
		{`{"cmd":"failpoint","name":"after-setnx","action":"crash"}`, worker.CodeNotSupported, "cannot hit it"},
		{`{"cmd":"init","client":"c1"}`, worker.CodeMalformed, "already initialised"},
		{`{"cmd":"acquire","op":4,"key":"k","ttl_ms":5}`, worker.CodeMalformed, "before the lock has endpoints"},
		{`{"cmd":"acquire","op":4,"key":"k","ttl_ms":5}`, worker.CodeMalformed, "op id 4 was used before"},
		{`{"cmd":"endpoints","endpoints":{"Primary":"x"}}`, worker.CodeMalformed, "endpoints.Primary"},
		{`{"cmd":"init","client":"c1","resource":"` + strings.Repeat("x", worker.MaxLine) + `"}`, worker.CodeMalformed, "line longer than 1048576 bytes"},
	} {
		m := exchange(c.line)
		line := n
		if len(c.line) > 200 {
			c.line = c.line[:200] + "..."
		}
		wantOp := int64(0)
		if strings.Contains(c.want, "before the lock has endpoints") || strings.Contains(c.want, "ttl_ms") || strings.Contains(c.want, "wait_ms") {
			wantOp = m.Op // checked below
			if m.Op == 0 {
				t.Errorf("%s: a refused op with a new id must be ended by its error: %+v", c.line, m)
			}
		}
		if m.Op != wantOp {
			t.Errorf("%s: error ends op %d, want %d", c.line, m.Op, wantOp)
		}
		if m.Type != "error" || m.Code != c.code || m.Line != line || !strings.Contains(m.Error, c.want) {
			t.Errorf("%s\n got %+v\nwant error code %s at line %d containing %q", c.line, m, c.code, line, c.want)
		}
	}
}

// A worker that writes a bad line after ready: the run records it as a
// protocol error naming the worker and the line, and exits 2.
func TestExternalWorkerGarbageAfterReady(t *testing.T) {
	cmd, _ := script(t, `n=0
while read -r l; do
  case "$l" in
  *'"init"'*) echo '{"type":"ready","pid":1,"lock":"mine","needs":"single"}' ;;
  *'"acquire"'*)
    op=$(echo "$l" | sed 's/.*"op":\([0-9]*\).*/\1/')
    n=$((n+1))
    if [ $n = 1 ]; then echo 'WARNING: something odd'; fi
    echo '{"type":"reply","op":'$op',"status":"fail","error":"busy"}' ;;
  esac
done`)
	opt := Options{Backend: "process", ReportsDir: t.TempDir()}
	out, err := Run(context.Background(), externalPlan(t, cmd, "standalone-control", 1), opt)
	if Code(out, err) != ExitHarness || err == nil {
		t.Fatalf("exit %d, error %v: want exit 2", Code(out, err), err)
	}
	for _, w := range []string{"worker c1 (/bin/sh ", "stdout:2:", `"WARNING: something odd"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	assertNoLeftovers(t, out.Meta.RunID)
}

// externalPlan prepares a built-in scenario (one cycle; clients > 0: that
// many clients) for an external worker.
func externalPlan(t *testing.T, cmd []string, scenario string, clients int) *Plan {
	t.Helper()
	subj, err := External(context.Background(), cmd, "")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	if clients > 0 {
		sc.Workload.Clients = clients
	}
	return plan(t, sc, &subj, Overrides{Cycles: 1})
}
