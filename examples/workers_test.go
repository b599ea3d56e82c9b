package examples

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockfault/lockfault/worker"
)

// libraryWorker is one external worker: its command and what its ready must say.
type libraryWorker struct {
	lock, needs string
	caps        []string
	options     []string
	argv        []string
	packages    []string // Debian packages it needs (their versions appear in ready's version)
}

var workers = []libraryWorker{
	{"redis-py", "single", []string{"extend"}, []string{"sleep_ms"}, []string{"/usr/bin/python3", "python-redis/worker.py"}, []string{"python3-redis"}},
	{"redis-py-asyncio", "single", []string{"extend"}, []string{"sleep_ms"}, []string{"/usr/bin/python3", "python-redis/worker_asyncio.py"}, []string{"python3-redis"}},
	{"tooz-redis", "single", []string{"watchdog"}, []string{"heart"}, []string{"/usr/bin/python3", "python-tooz/worker.py"}, []string{"python3-tooz", "python3-redis"}},
	{"malkusch-phpredis", "masters", nil, nil, []string{"/usr/bin/php", "php-malkusch/worker.php"}, []string{"php-malkusch-lock", "php-redis"}},
	{"symfony-redis", "single", []string{"extend"}, nil, []string{"/usr/bin/php", "php-symfony/worker.php"}, []string{"php-symfony-lock", "php-redis"}},
	{"symfony-combined", "masters", []string{"extend"}, []string{"strategy"}, []string{"/usr/bin/php", "php-symfony/worker_combined.php"}, []string{"php-symfony-lock", "php-redis"}},
	{"laravel-redis", "single", nil, []string{"block_sleep_ms"}, []string{"/usr/bin/php", "php-laravel/worker.php"}, []string{"php-illuminate-cache", "php-illuminate-redis", "php-redis"}},
	{"redis-py-cluster", "cluster", []string{"extend"}, []string{"sleep_ms"}, []string{"/usr/bin/python3", "python-redis/worker_cluster.py"}, []string{"python3-redis"}},
	{"symfony-redis-cluster", "cluster", []string{"extend"}, nil, []string{"/usr/bin/php", "php-symfony/worker_cluster.php"}, []string{"php-symfony-lock", "php-redis"}},
	{"laravel-redis-cluster", "cluster", nil, []string{"block_sleep_ms"}, []string{"/usr/bin/php", "php-laravel/worker_cluster.php"}, []string{"php-illuminate-cache", "php-illuminate-redis", "php-redis"}},
}

// debianVersion is the installed version of a Debian package; the test
// fails, naming the package, when it is missing.
func debianVersion(t *testing.T, pkg string) string {
	t.Helper()
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", pkg).Output()
	if err != nil || len(out) == 0 {
		t.Fatalf("the worker needs the Debian package %s (apt-get install %s): %v", pkg, pkg, err)
	}
	return string(out)
}

// session starts a worker in a process group of its own (as the harness
// does) and returns functions to send a line and to receive one message,
// decoded by the harness's strict rules: a line that breaks them fails the
// test.
func session(t *testing.T, argv []string) (send func(string), recv func() worker.Message) {
	send, recvWithin := sessionWithin(t, argv)
	recv = func() worker.Message {
		t.Helper()
		m, ok := recvWithin(20 * time.Second)
		if !ok {
			t.Fatal("no message from the worker within 20 s")
		}
		return m
	}
	return send, recv
}

// sessionWithin is session with a receive that gives up after d (false).
func sessionWithin(t *testing.T, argv []string) (send func(string), recv func(d time.Duration) (worker.Message, bool)) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), worker.EnvRole+"=worker")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		lr := worker.NewLineReader(out)
		for {
			b, err := lr.Next()
			if err != nil {
				return
			}
			lines <- string(b)
		}
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the PHP reader process too
		<-done
	})
	send = func(s string) {
		if _, err := io.WriteString(in, s+"\n"); err != nil {
			t.Fatalf("send %.80s: %v", s, err)
		}
	}
	recv = func(d time.Duration) (worker.Message, bool) {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the worker closed its stdout")
			}
			m, err := worker.DecodeMessage([]byte(l))
			if err != nil {
				t.Fatalf("the worker wrote a line that breaks the protocol: %v: %.200s", err, l)
			}
			return m, true
		case <-time.After(d):
			return worker.Message{}, false
		}
	}
	return send, recv
}

// Every worker describes its lock honestly: name, needs, caps, options,
// and the exact versions of the packages it runs.
func TestWorkersDescribeTheirLock(t *testing.T) {
	for _, w := range workers {
		t.Run(w.lock, func(t *testing.T) {
			send, recv := session(t, w.argv)
			send(`{"cmd":"init","client":"describe"}`)
			m := recv()
			if m.Type != "ready" {
				t.Fatalf("init: %+v", m)
			}
			if err := worker.ValidateReady(m); err != nil {
				t.Fatal(err)
			}
			if m.Lock != w.lock || string(m.Needs) != w.needs || !slices.Equal(m.Caps, w.caps) || !slices.Equal(m.Options, w.options) {
				t.Errorf("ready %+v\nwant lock %s, needs %s, caps %v, options %v", m, w.lock, w.needs, w.caps, w.options)
			}
			for _, fp := range worker.WorkerFailpoints {
				if !slices.Contains(m.Failpoints, fp) {
					t.Errorf("failpoint %s missing from %v", fp, m.Failpoints)
				}
			}
			for _, p := range w.packages {
				if v := debianVersion(t, p); !strings.Contains(m.Version, p+" "+v) {
					t.Errorf("version %q does not name %s %s", m.Version, p, v)
				}
			}
			send(`{"cmd":"shutdown"}`)
		})
	}
}

// An option the library does not have is refused before anything starts.
func TestWorkersRefuseUnknownOptions(t *testing.T) {
	for _, w := range workers {
		t.Run(w.lock, func(t *testing.T) {
			send, recv := session(t, w.argv)
			send(`{"cmd":"init","client":"c1","options":{"colour":"red"}}`)
			if m := recv(); m.Type != "error" || m.Code != worker.CodeNotSupported || !strings.Contains(m.Error, `"colour"`) {
				t.Fatalf("unknown option: %+v", m)
			}
			send(`{"cmd":"release","op":1,"lease":"L"}`)
			if m := recv(); m.Type != "error" || m.Op != 1 || !strings.Contains(m.Error, "after a failed init") {
				t.Fatalf("an operation after a failed init: %+v", m)
			}
		})
	}
}

// strictCase is one line that breaks a rule of docs/PROTOCOL.md and the
// error it must draw. Lines are sent after an init without endpoints, so
// only the rule under test can refuse them.
type strictCase struct {
	name, line, code, want string
	op                     int64 // the op the error must end (0: none)
}

var strictCases = []strictCase{
	{"trailing data", `{"cmd":"cut"}{"cmd":"shutdown"}`, worker.CodeMalformed, "data after the JSON object", 0},
	{"key case", `{"CMD":"cut"}`, worker.CodeMalformed, "field cmd: missing", 0},
	{"field case", `{"cmd":"clock","Offset_ms":5}`, worker.CodeMalformed, "field Offset_ms: unknown key", 0},
	{"key of another command", `{"cmd":"cs","op":1,"lease":"L","ttl_ms":5}`, worker.CodeMalformed, "field ttl_ms: unknown key", 1},
	{"duplicate key", `{"cmd":"clock","offset_ms":1,"offset_ms":2}`, worker.CodeMalformed, "given twice", 0},
	{"null", `{"cmd":"clock","offset_ms":null}`, worker.CodeMalformed, "null is not allowed", 0},
	{"not an object", `["cut"]`, worker.CodeMalformed, "not a JSON object", 0},
	{"not JSON", `{"cmd":`, worker.CodeMalformed, "", 0},
	{"not UTF-8", "{\"cmd\":\"cut\",\"x\":\"\xff\"}", worker.CodeMalformed, "UTF-8", 0},
	{"unknown command", `{"cmd":"fly"}`, worker.CodeNotSupported, "unknown command", 0},
	{"negative op", `{"cmd":"release","op":-1,"lease":"L"}`, worker.CodeMalformed, "field op", 0},
	{"zero op", `{"cmd":"release","op":0,"lease":"L"}`, worker.CodeMalformed, "field op", 0},
	{"op too big", `{"cmd":"release","op":9007199254740992,"lease":"L"}`, worker.CodeMalformed, "field op", 0},
	{"fractional op", `{"cmd":"release","op":1.5,"lease":"L"}`, worker.CodeMalformed, "field op", 0},
	{"ttl zero", `{"cmd":"acquire","op":2,"key":"k","ttl_ms":0}`, worker.CodeMalformed, "ttl_ms: 0 is out of range", 2},
	{"ttl huge", `{"cmd":"acquire","op":3,"key":"k","ttl_ms":3600001}`, worker.CodeMalformed, "out of range", 3},
	{"ttl a string", `{"cmd":"acquire","op":4,"key":"k","ttl_ms":"5"}`, worker.CodeMalformed, "ttl_ms", 4},
	{"negative wait", `{"cmd":"acquire","op":5,"key":"k","ttl_ms":5,"wait_ms":-1}`, worker.CodeMalformed, "wait_ms", 5},
	{"negative hold", `{"cmd":"cs","op":6,"lease":"L","hold_ms":-1}`, worker.CodeMalformed, "hold_ms", 6},
	{"empty lease", `{"cmd":"release","op":7,"lease":""}`, worker.CodeMalformed, "field lease: empty", 7},
	{"op id reused", `{"cmd":"release","op":7,"lease":"L"}`, worker.CodeMalformed, "op id 7 was used before", 0},
	{"round ids not distinct", `{"cmd":"round","op":8,"op_cs":8,"op_release":9,"key":"k","lease":"L","ttl_ms":5}`, worker.CodeMalformed, "op_cs", 0},
	{"negative count", `{"cmd":"failpoint","name":"cs-after-read","action":"crash","count":-1}`, worker.CodeMalformed, "count", 0},
	{"negative ms", `{"cmd":"failpoint","name":"cs-after-read","action":"sleep","ms":-5}`, worker.CodeMalformed, "field ms", 0},
	{"bad action", `{"cmd":"failpoint","name":"cs-after-read","action":"explode"}`, worker.CodeMalformed, "allowed: crash, sleep, stop, off", 0},
	{"count overflows int", `{"cmd":"failpoint","name":"cs-after-read","action":"crash","count":99999999999999999999}`, worker.CodeMalformed, "count", 0},
	{"huge clock offset", `{"cmd":"clock","offset_ms":9223372036854775}`, worker.CodeMalformed, "offset_ms", 0},
	{"unsupported failpoint", `{"cmd":"failpoint","name":"after-setnx","action":"crash"}`, worker.CodeNotSupported, "cannot hit it", 0},
	{"second init", `{"cmd":"init","client":"c1"}`, worker.CodeMalformed, "already initialised", 0},
	{"op before endpoints", `{"cmd":"acquire","op":10,"key":"k","ttl_ms":5}`, worker.CodeMalformed, "before the lock has endpoints", 10},
	{"unknown endpoints key", `{"cmd":"endpoints","endpoints":{"Primary":"x"}}`, worker.CodeMalformed, "endpoints.Primary", 0},
	{"line over 1 MiB", `{"cmd":"cut","x":"` + strings.Repeat("a", worker.MaxLine) + `"}`, worker.CodeMalformed, "longer than", 0},
}

// strictProblems sends every strict case to a worker and returns what it
// got wrong, one sentence per case; nil when it keeps every rule.
func strictProblems(t *testing.T, argv []string) []string {
	send, recv := sessionWithin(t, argv)
	send(`{"cmd":"init","client":"c1"}`)
	if m, _ := recv(20 * time.Second); m.Type != "ready" {
		t.Fatalf("init without endpoints: %+v", m)
	}
	var problems []string
	for i, c := range strictCases {
		send(c.line)
		m, ok := recv(5 * time.Second)
		line := i + 2
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: no answer within 5 s; want error code %s at line %d", c.name, c.code, line))
			continue
		}
		if m.Type != "error" || m.Code != c.code || m.Line != line || m.Op != c.op || !strings.Contains(m.Error, c.want) || !strings.Contains(m.Error, fmt.Sprintf("stdin:%d:", line)) {
			problems = append(problems, fmt.Sprintf("%s: got %+v; want error code %s at line %d, op %d, containing %q", c.name, m, c.code, line, c.op, c.want))
		}
		if c.name == "unsupported failpoint" && (m.Name != "after-setnx" || m.Action != "crash") {
			problems = append(problems, fmt.Sprintf("unsupported failpoint: the error does not name it: %+v", m))
		}
	}
	// After all that, the worker still answers.
	send(`{"cmd":"fly"}`)
	if m, _ := recv(5 * time.Second); m.Type != "error" || m.Line != len(strictCases)+2 {
		problems = append(problems, fmt.Sprintf("after the strict cases: %+v", m))
	}
	return problems
}

// Every worker refuses every line that breaks the protocol's rules, with
// the right code, line number and op.
func TestWorkersKeepTheStrictRules(t *testing.T) {
	for _, w := range workers {
		t.Run(w.lock, func(t *testing.T) {
			for _, p := range strictProblems(t, w.argv) {
				t.Error(p)
			}
		})
	}
}

// The strict check catches a worker that takes a duplicate key (the last
// one wins, as Python's json module does by default): testdata holds the
// redis-py worker with exactly that rule taken out.
func TestStrictCheckCatchesADuplicateKey(t *testing.T) {
	ps := strictProblems(t, []string{"/usr/bin/python3", filepath.Join("testdata", "lenient_worker.py")})
	if len(ps) != 1 || !strings.HasPrefix(ps[0], "duplicate key:") {
		t.Fatalf("want exactly the duplicate-key case caught, got %d problems: %q", len(ps), ps)
	}
}
