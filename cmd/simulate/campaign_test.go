package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lockfault/lockfault/campaign"
)

// A campaign run as 3 shards by 3 separate processes and merged gives the
// same cells as the same campaign run unsharded, and the merged result has
// rates. (A small campaign: the single-master lock on two of its
// properties, 3 times each, one cycle a run.)
func TestShardedCampaignMergesToTheUnshardedCells(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real nodes")
	}
	bin := simulateBin(t)
	dir := t.TempDir()
	args := func(extra ...string) []string {
		return append([]string{"campaign", "-name", "shard-test", "-locks", "single", "-properties", "exclusion/no-faults,crash/frees-within-ttl",
			"-repeat", "3", "-cycles", "1", "-backend", "process"}, extra...)
	}
	run := func(a ...string) error {
		out, err := exec.Command(bin, a...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("simulate %v: %v\n%s", a, err, out)
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = run(args("-shard", fmt.Sprintf("%d/3", i+1), "-results", filepath.Join(dir, fmt.Sprintf("shard-%d", i+1)))...)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := run(args("-results", filepath.Join(dir, "whole"))...); err != nil {
		t.Fatal(err)
	}
	// merge exits 1: 3 runs a cell are too few for a rate to match 19/20.
	merge := exec.Command(bin, "merge", "-out", filepath.Join(dir, "merged"), filepath.Join(dir, "shard-1"), filepath.Join(dir, "shard-2"), filepath.Join(dir, "shard-3"))
	if out, err := merge.CombinedOutput(); merge.ProcessState.ExitCode() > 1 {
		t.Fatalf("simulate merge: %v\n%s", err, out)
	}
	sharded, err := campaign.Merge(filepath.Join(dir, "shard-1"), filepath.Join(dir, "shard-2"), filepath.Join(dir, "shard-3"))
	if err != nil {
		t.Fatal(err)
	}
	whole, err := campaign.Merge(filepath.Join(dir, "whole"))
	if err != nil {
		t.Fatal(err)
	}
	if !sharded.Complete() || sharded.Done != 6 || whole.Done != 6 {
		t.Fatalf("runs: sharded %d (complete %v), whole %d; want 6 each", sharded.Done, sharded.Complete(), whole.Done)
	}
	if len(sharded.Cells) != len(whole.Cells) {
		t.Fatalf("%d cells sharded, %d whole", len(sharded.Cells), len(whole.Cells))
	}
	for _, c := range whole.Cells {
		s, ok := sharded.Cell(c.Subject.Key, string(c.Item.Kind)+":"+c.Item.Name)
		switch {
		case !ok:
			t.Errorf("cell %s × %s missing from the merge", c.Subject.Key, c.Item.Name)
		case s.Rate.N != c.Rate.N || s.Verdict != c.Verdict || s.Rate.Outcome != c.Rate.Outcome:
			t.Errorf("cell %s × %s: sharded %s %d/%d (%s), whole %s %d/%d (%s)", c.Subject.Key, c.Item.Name,
				s.Rate.Outcome, s.Rate.K, s.Rate.N, s.Verdict, c.Rate.Outcome, c.Rate.K, c.Rate.N, c.Verdict)
		case s.Rate.High <= s.Rate.Low:
			t.Errorf("cell %s × %s has no interval: %+v", c.Subject.Key, c.Item.Name, s.Rate)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "merged", "campaign.json")); err != nil {
		t.Errorf("the merge wrote no campaign.json: %v", err)
	}
	// Two shards of three: exit 2, and the reason names the missing one.
	part := exec.Command(bin, "merge", "-out", filepath.Join(dir, "part"), filepath.Join(dir, "shard-1"), filepath.Join(dir, "shard-2"))
	out, _ := part.CombinedOutput()
	if part.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "incomplete: ") || !strings.Contains(string(out), "missing shards: [3/3]") {
		t.Errorf("merging 2 of 3 shards: exit %d\n%s", part.ProcessState.ExitCode(), out)
	}
}

// -worker-known reaches the definition: a known limit the hunt does not
// have, or one given without -worker, is refused before anything runs;
// the flags and a file that say the same known limits are one campaign.
// Nothing is started.
func TestCampaignWorkerKnownFlag(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-locks", "single", "-worker-known", "node-clock", "-hunt", "1"},
			"simulate campaign: -worker-known: given without -worker (allowed: the known limits of a -worker's lock: failover, node-clock,"},
		{[]string{"-worker", "python3 w.py", "-worker-known", "node-clock,moon", "-hunt", "1"},
			`simulate campaign: -worker-known: unknown known limit "moon" (allowed: failover, node-clock,`},
		{[]string{"-worker", "python3 w.py", "-worker-known", "node-clock,node-clock", "-hunt", "1"},
			`simulate campaign: -worker-known: known limit "node-clock" is listed twice`},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		if code := realMain(append([]string{"campaign"}, c.args...), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d\n%s\nwant %s", c.args, code, stderr.String(), c.want)
		}
	}
	def := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(def, []byte("name: py\nrepetitions: 1\nsubjects:\n  - worker: python3 w.py\n    known: [node-clock, failover]\nitems: [{hunt: 1}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file, err := readDefinition(def, campaign.Values{})
	if err != nil {
		t.Fatal(err)
	}
	flags, err := readDefinition("", campaign.Values{Name: "py", Worker: "python3 w.py", WorkerKnown: []string{"failover", "node-clock"}, Hunt: []string{"1"}, Repetitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	if file.Hash() != flags.Hash() {
		t.Fatalf("flags and file differ:\n%s\n%s", flags.Canonical(), file.Canonical())
	}
}
