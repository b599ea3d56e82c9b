package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/runner"
)

// fakeExt stands in for lockfault-ext: it prints the definition file it is
// given (-def, its third argument) and then the Job's options it got.
func fakeExt(t *testing.T) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lockfault-ext")
	script := "#!/bin/sh\n[ \"$1 $2\" = 'emit-k8s -def' ] || exit 3\nif [ -n \"$3\" ]; then cat \"$3\"; else echo 'DEF EMPTY'; fi\nshift 3\necho \"OPTIONS $*\"\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(runner.EnvExt, p)
}

// TestEmitK8sTakesTheFlagForm: -emit k8s with a campaign given by flags
// hands lockfault-ext a definition file of that campaign (removed
// afterwards) and the options after --; a bad flag is refused before;
// with no campaign at all lockfault-ext gets -def "" and names it with the
// other missing options.
func TestEmitK8sTakesTheFlagForm(t *testing.T) {
	fakeExt(t)
	dir := t.TempDir()
	t.Chdir(dir)
	code, out, stderr := run("campaign", "-emit", "k8s", "-locks", "single", "-properties", "exclusion", "-repeat", "2", "--", "-image", "registry.example/lockfault:1.0", "-shards", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"repetitions: 2\n", "- lock: single\n", "- property: exclusion/no-faults\n", "OPTIONS -image registry.example/lockfault:1.0 -shards 2\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("lockfault-ext did not get %q:\n%s", want, out)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".lockfault-campaign-*")); len(left) > 0 {
		t.Errorf("the definition file was left behind: %v", left)
	}
	if code, _, stderr := run("campaign", "-emit", "k8s", "-locks", "nope"); code != 2 || !strings.Contains(stderr, `-locks: unknown lock "nope"`) {
		t.Errorf("a bad lock: exit %d, %s", code, stderr)
	}
	if code, out, _ := run("campaign", "-emit", "k8s", "--", "-shards", "2"); code != 0 || !strings.Contains(out, "DEF EMPTY\nOPTIONS -shards 2") {
		t.Errorf("no campaign: exit %d, lockfault-ext got:\n%s", code, out)
	}
}

// TestCampaignRefusesUpFront: in a pod (JOB_COMPLETION_INDEX set) a backend
// other than process, and with the clock shim missing the items that need
// it, are refused before any run starts: exit 2, no results folder.
func TestCampaignRefusesUpFront(t *testing.T) {
	results := filepath.Join(t.TempDir(), "shard")
	t.Setenv("JOB_COMPLETION_INDEX", "0")
	code, _, stderr := run("campaign", "-locks", "single", "-properties", "exclusion/no-faults", "-backend", "docker", "-results", results)
	if code != 2 || !strings.Contains(stderr, "-backend docker: in a Kubernetes pod (JOB_COMPLETION_INDEX is set)") {
		t.Errorf("-backend docker in a pod: exit %d, %s", code, stderr)
	}
	code, _, stderr = run("campaign", "-locks", "single", "-properties", "exclusion/no-faults", "-results", results)
	if code != 2 || !strings.Contains(stderr, "-backend auto: in a Kubernetes pod") {
		t.Errorf("-backend auto (the default) in a pod: exit %d, %s", code, stderr)
	}
	t.Setenv("LOCKFAULT_CLOCK_SHIM", filepath.Join(t.TempDir(), "missing.so"))
	code, _, stderr = run("campaign", "-locks", "redlock", "-properties", "exclusion/no-faults", "-scenarios", "redlock-clock-jump,redlock-restart",
		"-backend", "process", "-results", results)
	if code != 2 || !strings.Contains(stderr, "1 items use clock-jump, clock-drift or power-loss, which need the clock shim, and it is missing") ||
		!strings.HasSuffix(strings.TrimSpace(stderr[:strings.Index(stderr, " (make shim")]), "scenario:redlock-clock-jump") {
		t.Errorf("a clock-jump scenario without the shim: exit %d, %s", code, stderr)
	}
	// A pod whose image lacks a server (PATH holding none): the server is
	// named with its package, before any run.
	t.Setenv("PATH", t.TempDir())
	code, _, stderr = run("campaign", "-locks", "single", "-properties", "exclusion/no-faults,failover/sentinel", "-backend", "process", "-results", results)
	if code != 2 || !strings.Contains(stderr, "redis-server not found: install the Debian package redis-server; redis-sentinel not found: install the Debian package redis-sentinel") {
		t.Errorf("a campaign without the servers: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(results); !os.IsNotExist(err) {
		t.Errorf("a refused campaign made its results folder: %v", err)
	}
}
