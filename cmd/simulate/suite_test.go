package main

import (
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/redis/go-redis/v9"
)

// singleNoNX is a copy of the built-in "single" lock with one bug: its
// acquire sends SET PX without NX, so it overwrites a held lock. Test code
// only: it is registered in this test binary, never in the product.
type singleNoNX struct{ rdb redis.UniversalClient }

func init() {
	lockimpl.Register(lockimpl.Info{Name: "single-no-nx", Source: "test: single with SET instead of SET NX",
		Promises: "none (broken on purpose)", Needs: "single"}, func(cfg lockimpl.Config) (lockimpl.Lock, error) {
		rdb, err := lockimpl.NewPrimaryClient(cfg.Endpoints)
		if err != nil {
			return nil, err
		}
		return &singleNoNX{rdb}, nil
	})
}

var unlock = redis.NewScript(lockimpl.UnlockScript)

func (s *singleNoNX) Acquire(ctx context.Context, resource string, opts lockimpl.AcquireOptions) (*lockimpl.Lease, error) {
	token := lockimpl.RandomToken()
	// The bug: Set, where single has SetNX.
	if err := s.rdb.Set(ctx, lockimpl.KeyFor(resource), token, opts.TTL).Err(); err != nil {
		return nil, err
	}
	return &lockimpl.Lease{Resource: resource, Token: token, Validity: opts.TTL}, nil
}

func (s *singleNoNX) Release(ctx context.Context, l *lockimpl.Lease) error {
	n, err := unlock.Run(ctx, s.rdb, []string{lockimpl.KeyFor(l.Resource)}, l.Token).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return lockimpl.ErrNotHeld
	}
	return nil
}

func (s *singleNoNX) Close() error { return s.rdb.Close() }

// The regression gate: a baseline written with the correct lock, then the
// same suite against the copy with one bug exits 1 with a diff naming the
// property; against the unchanged lock it exits 0. The junit.xml of each
// run has one testcase per property with the card's outcome.
func TestSuiteRegressionGate(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "baseline.txt")
	reps := filepath.Join(dir, "reports")
	common := []string{"-backend", "process", "-only", "exclusion/no-faults,stale/write-fenced", "-cycles", "2", "-reports", reps}

	code, out, errs := run(append([]string{"suite", "-lock", "single", "-write-baseline", base}, common...)...)
	if code != 0 {
		t.Fatalf("correct lock: exit %d\n%s\n%s", code, out, errs)
	}
	data, err := os.ReadFile(base)
	if err != nil || !strings.Contains(string(data), "exclusion/no-faults  held\nstale/write-fenced   not-claimed\n") {
		t.Fatalf("baseline: %v\n%s", err, data)
	}
	checkJUnit(t, filepath.Join(reps, "suite", "single"))

	code, out, errs = run(append([]string{"suite", "-lock", "single", "-baseline", base}, common...)...)
	if code != 0 || !strings.Contains(out, "0 regressed") {
		t.Fatalf("unchanged lock against its baseline: exit %d\n%s\n%s", code, out, errs)
	}

	code, out, errs = run(append([]string{"suite", "-lock", "single-no-nx", "-baseline", base}, common...)...)
	if code != 1 {
		t.Fatalf("broken copy against the baseline: exit %d, want 1\n%s\n%s", code, out, errs)
	}
	for _, w := range []string{"REGRESSED", "exclusion/no-faults  before held", "now violated", "report ", "Two holders at once"} {
		if !strings.Contains(out, w) {
			t.Errorf("regression diff lacks %q:\n%s", w, out)
		}
	}
	checkJUnit(t, filepath.Join(reps, "suite", "single-no-nx"))
}

// checkJUnit parses the junit.xml of the one card under lockDir and checks
// it against the card's suite.json: one testcase per property, a failure
// for a violation (its message the finding and the report), a skip for
// not claimed, an error for a harness error, nothing for held.
func checkJUnit(t *testing.T, lockDir string) {
	t.Helper()
	runs, _ := filepath.Glob(filepath.Join(lockDir, "*", "junit.xml"))
	if len(runs) == 0 {
		t.Fatalf("no junit.xml under %s", lockDir)
	}
	path := runs[len(runs)-1]
	c, err := card.ReadJSON(filepath.Join(filepath.Dir(path), "suite.json"))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	var doc struct {
		Suites []struct {
			Tests int `xml:"tests,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
				Skipped *struct{} `xml:"skipped"`
				Error   *struct{} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != len(c.Rows) || doc.Suites[0].Tests != len(c.Rows) || len(c.Rows) == 0 {
		t.Fatalf("%s: want one testcase per property (%d), got %+v", path, len(c.Rows), doc)
	}
	seen := map[string]bool{}
	for _, tc := range doc.Suites[0].Cases {
		row, ok := c.Row(tc.Name)
		if !ok || seen[tc.Name] {
			t.Errorf("testcase %q: not a property of the card, or twice", tc.Name)
			continue
		}
		seen[tc.Name] = true
		got := "held"
		switch {
		case tc.Failure != nil:
			got = "violated"
			if !strings.Contains(tc.Failure.Message, row.Finding) || !strings.Contains(tc.Failure.Message, "report.md") {
				t.Errorf("%s: failure message %q lacks the finding or the report", tc.Name, tc.Failure.Message)
			}
		case tc.Skipped != nil:
			got = "not-claimed"
		case tc.Error != nil:
			got = "harness-error"
		}
		if got != string(row.Outcome) {
			t.Errorf("%s: junit says %s, the card %s", tc.Name, got, row.Outcome)
		}
	}
}

func TestSuiteBadInputBeforeAnythingStarts(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("# ok\nexclusion/no-faults held\nno/such-property held\n"), 0o644)
	badOutcome := filepath.Join(dir, "bad2.txt")
	os.WriteFile(badOutcome, []byte("exclusion/no-faults fine\n"), 0o644)
	reps := filepath.Join(dir, "reports")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"suite"}, "-lock: missing"},
		{[]string{"suite", "-lock", "nope"}, `unknown lock "nope"`},
		{[]string{"suite", "-lock", "single", "-backend", "vm"}, `-backend: "vm" is not allowed`},
		{[]string{"suite", "-lock", "single", "-parallel", "0"}, "-parallel 0: want 1 to 8"},
		{[]string{"suite", "-lock", "single", "-only", "no/such"}, `no property matches "no/such"`},
		{[]string{"suite", "-lock", "single", "-baseline", bad}, bad + `:3: property: "no/such-property" is not a property of the suite`},
		{[]string{"suite", "-lock", "single", "-baseline", badOutcome}, badOutcome + `:1: outcome: "fine" is not allowed (allowed: held, violated, not-claimed)`},
		{[]string{"suite", "-lock", "single", "-baseline", filepath.Join(dir, "missing.txt")}, "no such file"},
		{[]string{"suite", "-lock", "single", "extra"}, `unexpected argument "extra"`},
		{[]string{"suite", "-lock", "single", "-timeout", "1ms"}, "-timeout 1ms: want 1s to 24h"},
		{[]string{"suite", "-worker", "'unterminated"}, "unterminated quote"},
		{[]string{"cards", "-locks", "single,nope"}, `-locks: unknown lock "nope"`},
		{[]string{"cards", "-locks", ""}, `-locks: empty and no -worker: nothing to measure`},
		{[]string{"cards", "-backend", "vm"}, `-backend: "vm" is not allowed`},
		{[]string{"cards", "-only", "no/such"}, `no property matches "no/such"`},
		{[]string{"cards", "-extra", filepath.Join(dir, "missing.yaml")}, "-extra: "},
	}
	for _, c := range cases {
		code, _, stderr := run(append(c.args, "-reports", reps)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	if _, err := os.Stat(reps); !os.IsNotExist(err) {
		t.Errorf("bad input started something: %s exists", reps)
	}
}

// A published library in each language the examples use, through its
// external worker (redis-py's lock in Python, Symfony's RedisStore in PHP),
// gets a card: the lock is what the worker declares, its junit.xml has a
// testcase per property, and the properties it does not claim are skipped.
func TestSuiteExternalWorkers(t *testing.T) {
	for _, w := range []struct{ lock, cmd string }{
		{"redis-py", "/usr/bin/python3 " + filepath.Join("..", "..", "examples", "python-redis", "worker.py")},
		{"symfony-redis", "/usr/bin/php " + filepath.Join("..", "..", "examples", "php-symfony", "worker.php")},
	} {
		t.Run(w.lock, func(t *testing.T) {
			reps := filepath.Join(t.TempDir(), "reports")
			code, out, errs := run("suite", "-worker", w.cmd, "-backend", "process", "-cycles", "2",
				"-only", "exclusion/no-faults,stale/write-fenced", "-reports", reps)
			if code != 0 {
				t.Fatalf("%s suite: exit %d\n%s\n%s", w.lock, code, out, errs)
			}
			for _, want := range []string{"lock " + w.lock, "exclusion/no-faults", "held", "not claimed: " + w.lock + " does not claim fencing"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			checkJUnit(t, filepath.Join(reps, "suite", w.lock))
		})
	}
}

// Without a baseline, a built-in lock is held to the promise table: get-set
// violates exclusion/no-faults as the table expects (exit 0); the same
// outcome for a lock the table expects to hold is a difference (exit 1).
func TestSuiteBuiltinAgainstPromiseTable(t *testing.T) {
	reps := filepath.Join(t.TempDir(), "reports")
	common := []string{"-backend", "process", "-only", "exclusion/no-faults", "-cycles", "2", "-reports", reps}
	code, out, errs := run(append([]string{"suite", "-lock", "get-set"}, common...)...)
	if code != 0 || !strings.Contains(out, "violated as the promise table expects: exclusion/no-faults") {
		t.Fatalf("get-set: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = run(append([]string{"suite", "-lock", "single-no-nx"}, common...)...)
	if code != 1 || !strings.Contains(out, "DIFFERS from the promise table: exclusion/no-faults expected held, got violated") {
		t.Fatalf("single-no-nx: exit %d, want 1\n%s\n%s", code, out, errs)
	}
}
