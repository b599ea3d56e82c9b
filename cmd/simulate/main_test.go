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
		{[]string{"run", "-backend", "vm", "master-failover"}, `-backend "vm" is not allowed (allowed: docker, process, auto)`},
		{[]string{"run", "no-such-scenario"}, `no scenario "no-such-scenario" (built-in:`},
		{[]string{"run", "-lock", "no-such-lock", "master-failover"}, `unknown lock "no-such-lock"`},
		{[]string{"run", "-cycles", "x", "master-failover"}, `invalid value "x" for flag -cycles`},
		{[]string{"run", "-variant", "nope", "master-failover"}, `no variant "nope"`},
		{[]string{"check"}, "want one report folder"},
		{[]string{"run", "-cycles", "1000000000", "master-failover"}, "-cycles 1000000000: want 1 to 1000"},
		{[]string{"run", "-cycles", "-1", "master-failover"}, "-cycles -1: want 1 to 1000"},
		{[]string{"run", "-cycles", "0", "master-failover"}, "-cycles 0: want 1 to 1000"},
		{[]string{"claims", "-cycles", "-1"}, "-cycles -1: want 1 to 1000"},
		{[]string{"claims", "-only", "C99"}, `nothing matches -only "C99"`},
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
{"seq":7,"t":9600,"ki`
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
