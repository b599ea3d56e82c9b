package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := realMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBadInputIsRefusedClearly(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{nil, "usage: simulate"},
		{[]string{"fly"}, `unknown command "fly"`},
		{[]string{"run"}, "want exactly one scenario"},
		{[]string{"run", "-backend", "vm", "master-failover"}, `-backend: "vm" is not allowed (allowed: docker, process, auto)`},
		{[]string{"run", "no-such-scenario"}, `no scenario "no-such-scenario" (built-in:`},
		{[]string{"run", "-lock", "no-such-lock", "master-failover"}, `unknown lock "no-such-lock"`},
		{[]string{"run", "-cycles", "x", "master-failover"}, `-cycles: parse error`},
		{[]string{"run", "-variant", "nope", "master-failover"}, `no variant "nope"`},
		{[]string{"check"}, "want one report folder"},
		{[]string{"run", "-cycles", "1000000000", "master-failover"}, "-cycles 1000000000: want 1 to 1000"},
		{[]string{"run", "-cycles", "-1", "master-failover"}, "-cycles -1: want 1 to 1000"},
		{[]string{"run", "-cycles", "0", "master-failover"}, "-cycles 0: want 1 to 1000"},
		{[]string{"claims", "-cycles", "-1"}, "-cycles -1: want 1 to 1000"},
		{[]string{"claims", "-only", "C99"}, `nothing matches -only "C99"`},
		// A hunt's bad input, before anything starts.
		{[]string{"hunt", "-lock", "single"}, "no budget: give -runs N or -time D"},
		{[]string{"hunt", "-lock", "single", "-runs", "0", "-time", "0s"}, "no budget"},
		{[]string{"hunt", "-lock", "single", "-runs", "1", "-known", "failover,gremlins"}, `unknown known limit "gremlins" (allowed: failover, node-clock`},
		{[]string{"hunt", "-lock", "single", "-runs", "-3"}, "-runs -3: want 1 to"},
		{[]string{"hunt", "-lock", "single", "-time", "10ms"}, "-time 10ms: want at least 1s"},
		{[]string{"hunt", "-lock", "nope", "-runs", "1"}, `unknown lock "nope"`},
		{[]string{"hunt", "-lock", "single", "-runs", "1", "extra"}, `unexpected argument "extra"`},
	}
	for _, c := range cases {
		code, _, stderr := run(c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", c.args, code)
		}
		if !strings.Contains(stderr, c.want) {
			t.Errorf("%v: stderr %q does not say %q", c.args, stderr, c.want)
		}
	}
}

func TestListShowsScenariosLocksFaults(t *testing.T) {
	code, out, _ := run("list")
	for _, w := range []string{"master-failover", "redlock", "power-loss"} {
		if !strings.Contains(out, w) {
			t.Errorf("list lacks %s", w)
		}
	}
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// check re-checks a recorded history: exit 0 when the verdict matches, 1
// when not; a folder whose harness died before report.json still works.
func TestCheckRecordedHistory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "replicated-control", "run1")
	os.MkdirAll(dir, 0o755)
	overlap := `{"seq":1,"t":1000,"kind":"invoke","process":"c1","op":"acquire","op_id":1}
{"seq":2,"t":2000,"kind":"ok","process":"c1","op":"acquire","op_id":1,"lease":"a"}
{"seq":3,"t":2500,"kind":"invoke","process":"c2","op":"acquire","op_id":2}
{"seq":4,"t":3000,"kind":"ok","process":"c2","op":"acquire","op_id":2,"lease":"b"}
{"seq":5,"t":9000,"kind":"invoke","process":"c1","op":"release","op_id":3,"lease":"a"}
{"seq":6,"t":9500,"kind":"invoke","process":"c2","op":"release","op_id":4,"lease":"b"}
`
	os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(overlap), 0o644)
	code, out, stderr := run("report", dir)
	if code != 2 || !strings.Contains(out, "overlap") {
		// No report.json: rebuilt from history alone, flagged as a harness failure.
		t.Fatalf("exit %d out %q err %q", code, out, stderr)
	}
	for _, f := range []string{"report.md", "report.json", "timeline.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("report did not write %s", f)
		}
	}
	// Now report.json exists (with the error noted): check reads it.
	code, out, _ = run("check", dir)
	if code != 2 || !strings.Contains(out, "expected: safe") {
		t.Fatalf("check: exit %d out %q", code, out)
	}
}

// A history too short to judge is never a pass: with a report.json that
// expects safe, an empty history, a single garbage line, or a history with
// no completed operation is exit 2, and says why. (Before: "verdict: safe",
// "match: yes", exit 0.)
func TestCheckUnjudgeableHistoryIsUnknown(t *testing.T) {
	meta := `{"meta":{"scenario":"standalone-control","lock":"single","run_id":"r","expect":["safe"],"matched":true}}`
	cases := map[string]struct{ history, want string }{
		"empty":      {"", "the history is empty"},
		"garbage":    {"garbage\n", "history.jsonl:1:"},
		"torn-only":  {`{"seq":1,"t":5,"ki`, "history.jsonl:1: newline: missing"},
		"no-outcome": {`{"seq":1,"t":5,"kind":"invoke","process":"c1","op":"acquire","op_id":1}` + "\n", "no client operation completed"},
		"no-value":   {`{"seq":1,"t":5,"kind":"access","access":"write","process":"c1","lease":"a"}` + "\n", "history.jsonl:1: value: missing"},
	}
	for name, c := range cases {
		dir := filepath.Join(t.TempDir(), "standalone-control", "r")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(c.history), 0o644)
		os.WriteFile(filepath.Join(dir, "report.json"), []byte(meta), 0o644)
		code, out, stderr := run("check", dir)
		if code != 2 || !strings.Contains(out+stderr, c.want) || strings.Contains(out, "match:    yes") {
			t.Errorf("%s: exit %d out %q err %q; want exit 2 saying %q", name, code, out, stderr, c.want)
		}
	}
}

func TestCheckLinTimeoutIsBounded(t *testing.T) {
	code, _, stderr := run("check", "-lin-timeout", "1ms", "x")
	if code != 2 || !strings.Contains(stderr, "-lin-timeout 1ms (allowed: 1s to 1h)") {
		t.Fatalf("exit %d err %q", code, stderr)
	}
}

// TestMissingProgramIsNamedWithItsPackage: on a machine without the
// servers (PATH holding none of them), a process run stops before any node
// starts with the program and the Debian package that provides it; a
// worker's interpreter that is not there is named the same way. -packages
// lists what make scenario installs.
func TestMissingProgramIsNamedWithItsPackage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	reports := t.TempDir()
	code, _, stderr := run("run", "-backend", "process", "-q", "-reports", reports, "sentinel-failover")
	if code != 2 || !strings.Contains(stderr, "redis-server not found: install the Debian package redis-server") ||
		!strings.Contains(stderr, "redis-sentinel not found: install the Debian package redis-sentinel") {
		t.Errorf("sentinel-failover without the servers: exit %d, stderr:\n%s", code, stderr)
	}
	if dirs, _ := filepath.Glob(filepath.Join(reports, "*", "*")); len(dirs) > 0 {
		t.Errorf("a run refused for a missing server made report folders: %v", dirs)
	}
	code, _, stderr = run("run", "-backend", "process", "-reports", reports, "-worker", "/nonexistent/php worker.php", "standalone-control")
	if code != 2 || !strings.Contains(stderr, "/nonexistent/php not found: install the Debian package php-cli") {
		t.Errorf("a worker whose php is missing: exit %d, stderr:\n%s", code, stderr)
	}
	for scenario, want := range map[string]string{
		"master-failover":   "redis-server\n",
		"sentinel-failover": "redis-server redis-sentinel\n",
		"etcd-pause":        "etcd-server\n",
	} {
		if code, out, stderr := run("run", "-packages", scenario); code != 0 || out != want {
			t.Errorf("run -packages %s: exit %d, %q (want %q) %s", scenario, code, out, want, stderr)
		}
	}
}

// TestNeedsExtSaysWhenLockfaultExtRuns: make scenario builds lockfault-ext
// only for a run whose lock is a published library's (the scenario's, a
// variant's or -lock's), never for lockfault's own locks or a worker's.
func TestNeedsExtSaysWhenLockfaultExtRuns(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"master-failover"}, "no\n"},
		{[]string{"gc-pause"}, "no\n"},
		{[]string{"etcd-pause"}, "yes\n"},
		{[]string{"-variant", "redsync", "gc-pause"}, "yes\n"},
		{[]string{"-lock", "redsync", "master-failover"}, "yes\n"},
		{[]string{"-lock", "redisson+wait-replicas=1", "master-failover"}, "no\n"},
		{[]string{"-worker", "/usr/bin/python3 examples/python-redis/worker.py", "master-failover"}, "no\n"},
	} {
		if code, out, stderr := run(append([]string{"run", "-needs-ext"}, c.args...)...); code != 0 || out != c.want {
			t.Errorf("run -needs-ext %v: exit %d, %q (want %q) %s", c.args, code, out, c.want, stderr)
		}
	}
}
