package campaign

import (
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/card"
)

// runShards runs every shard of d (N of them, those in only; nil: all)
// into <root>/shard-i and returns root.
func runShards(t *testing.T, d *Definition, n int, only ...int) string {
	t.Helper()
	root := t.TempDir()
	for i := 1; i <= n; i++ {
		if len(only) > 0 && !slices.Contains(only, i) {
			continue
		}
		if _, err := Run(context.Background(), d, Shard{i, n}, ExecutorFunc(fakeLock), filepath.Join(root, fmt.Sprintf("shard-%d", i)), 2); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// cellText is a report's cells in one comparable form.
func cellText(r *Report) string {
	var b strings.Builder
	for _, c := range r.Cells {
		fmt.Fprintf(&b, "%s: %s %v %s %d/%d\n", c.Key, c.Verdict, c.Counts, c.Rate.Outcome, c.Rate.K, c.Rate.N)
	}
	return b.String()
}

// Merging the shards of a campaign gives the cells of the unsharded run,
// whatever N; the cells say what fakeLock does.
func TestMergeEqualsTheUnshardedCampaign(t *testing.T) {
	d := runDefinition(t, 20)
	whole, err := Merge(runShards(t, d, 1))
	if err != nil {
		t.Fatal(err)
	}
	if !whole.Complete() || whole.Done != d.Runs() {
		t.Fatalf("unsharded: %s", whole.CompletenessText())
	}
	for _, n := range []int{2, 5} {
		m, err := Merge(runShards(t, d, n))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := cellText(m), cellText(whole); got != want {
			t.Fatalf("N=%d merges to other cells:\n%s\nwant\n%s", n, got, want)
		}
	}
	verdicts := map[string]Verdict{
		"lock=single | property:exclusion/no-faults":       Matches,   // held 19/20, unknown 1/20
		"lock=get-set | property:exclusion/no-faults":      Matches,   // violated 20/20, as the promise table says
		"lock=single | property:crash/mid-acquire":         Differs,   // held 17/20
		"lock=single | property:fencing/monotonic":         Differs,   // promised not-claimed, but fakeLock ran it: held
		"worker=python3 w.py | property:fencing/monotonic": Unclaimed, // a worker's lock that does not claim it
		"worker=python3 w.py | scenario:single-crash":      Matches,
		"lock=get-set | hunt:3":                            Matches,
	}
	for key, want := range verdicts {
		var got *Cell
		for i := range whole.Cells {
			if whole.Cells[i].Key == key {
				got = &whole.Cells[i]
			}
		}
		if got == nil || got.Verdict != want {
			t.Errorf("%s: %+v, want %s", key, got, want)
		}
	}
	c, _ := whole.Cell("single", "property:crash/mid-acquire")
	if c.Rate.K != 17 || c.Rate.N != 20 || c.Count(Violated) != 3 || len(c.Reports) != 3 || c.Finding == "" {
		t.Fatalf("crash/mid-acquire cell %+v", c)
	}
	if w, _ := whole.Cell("redis-py", "property:exclusion/no-faults"); w.Subject.LibraryVersion != "v1.2.3" {
		t.Fatalf("the worker's library version is lost: %+v", w.Subject)
	}
}

func TestMergeWritesTableJUnitAndJSON(t *testing.T) {
	d := runDefinition(t, 20)
	root := runShards(t, d, 3)
	m, err := Merge(root)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "merged")
	if err := m.Write(out); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(filepath.Join(out, FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	if cellText(back) != cellText(m) {
		t.Fatal("campaign.json does not read back to the same cells")
	}
	c, _ := back.Cell("single", "property:crash/mid-acquire")
	for _, p := range c.Reports {
		if strings.HasPrefix(p, "/") || !strings.HasPrefix(p, "../shard-") {
			t.Fatalf("report %q: want a path relative to the campaign's folder", p)
		}
		if _, err := os.Stat(filepath.Join(out, p)); err != nil {
			t.Fatalf("the report link does not resolve: %v", err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, FileMarkdown))
	for _, w := range []string{"| item | get-set | single | redis-py |", "✅ held 20/20 (84–100 %)", "❌ held 17/20 (64–95 %) · violated 3/20",
		"## Cells that match, with runs that did not show the expected outcome\n\n- **single** × `property:exclusion/no-faults`: expected held (promise table): held 19/20",
		"First finding: the harness's own path stalled",
		"UTC; their wall times add up to 5m0s. 256 of the 260 runs of claimed cells showed their cell's expected outcome.",
		"**✅ violated 20/20 (84–100 %)**", "— not claimed", "`worker=python3 w.py`: library version v1.2.3"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("campaign.md lacks %q:\n%s", w, md)
		}
	}
	data, _ := os.ReadFile(filepath.Join(out, FileJUnit))
	var j card.JUnitSuites
	if err := xml.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	var failures []string
	cases := 0
	for _, s := range j.Suites {
		for _, tc := range s.Cases {
			cases++
			if tc.Failure != nil {
				failures = append(failures, s.Name+" "+tc.Name+": "+tc.Failure.Message)
			}
		}
	}
	if cases != len(m.Cells) {
		t.Fatalf("%d testcases for %d cells", cases, len(m.Cells))
	}
	want := "lockfault campaign t: single property:crash/mid-acquire: expected held (promise table): held 17/20 (95 % CI 64–95 %), violated 3/20 (95 % CI 5–36 %)"
	if !slices.Contains(failures, want) || len(failures) != m.Count(Differs) {
		t.Fatalf("failures:\n%s\nwant among them:\n%s", strings.Join(failures, "\n"), want)
	}
}

func TestMergeReportsMissingShards(t *testing.T) {
	d := runDefinition(t, 2)
	m, err := Merge(runShards(t, d, 4, 1, 3, 4))
	if err != nil {
		t.Fatal(err)
	}
	if m.Complete() || strings.Join(m.Missing, ",") != "2/4" || m.Done >= m.Planned {
		t.Fatalf("missing %v, %s", m.Missing, m.CompletenessText())
	}
	var complete *card.JUnitCase
	for _, s := range m.JUnit().Suites {
		for i, c := range s.Cases {
			if c.Name == "campaign/complete" {
				complete = &s.Cases[i]
			}
		}
	}
	if complete == nil || complete.Error == nil || !strings.Contains(complete.Error.Message, "missing shards: [2/4]") {
		t.Fatalf("junit has no erroring campaign/complete case: %+v", complete)
	}
	if whole, _ := Merge(runShards(t, d, 2)); whole == nil || !whole.Complete() {
		t.Fatal("a complete merge is reported incomplete")
	}
}

func TestMergeRefusesMixes(t *testing.T) {
	d := runDefinition(t, 2)
	root := runShards(t, d, 2)
	s1, s2 := filepath.Join(root, "shard-1"), filepath.Join(root, "shard-2")

	// Another definition's shard 2.
	other := runDefinition(t, 3)
	o := runShards(t, other, 2, 2)
	_, err := Merge(s1, filepath.Join(o, "shard-2"))
	if err == nil || !strings.Contains(err.Error(), "cannot merge two campaign definitions, "+ShortHash(d.Hash())+" and "+ShortHash(other.Hash())) ||
		!strings.Contains(err.Error(), s1) || !strings.Contains(err.Error(), o) {
		t.Errorf("two definitions: %v", err)
	}
	// Another lockfault version's shard 2.
	v2 := *d
	v2.Version = "test-2"
	o = runShards(t, &v2, 2, 2)
	if _, err := Merge(s1, filepath.Join(o, "shard-2")); err == nil || !strings.Contains(err.Error(), `two lockfault versions, "test-1" and "test-2"`) {
		t.Errorf("two versions: %v", err)
	}
	// Another split of the same campaign.
	o = runShards(t, d, 3, 2)
	if _, err := Merge(s1, filepath.Join(o, "shard-2")); err == nil || !strings.Contains(err.Error(), "into 2 and into 3 shards") {
		t.Errorf("two splits: %v", err)
	}
	// One shard twice.
	if _, err := Merge(s1, s1, s2); err == nil || !strings.Contains(err.Error(), "shard 1/2 is in two folders") {
		t.Errorf("a shard twice: %v", err)
	}
	// A run recorded twice in its shard.
	lines, _ := os.ReadFile(filepath.Join(s2, FileResults))
	first := strings.SplitAfter(string(lines), "\n")[0]
	appendTo(t, filepath.Join(s2, FileResults), first)
	if _, err := Merge(root); err == nil || !strings.Contains(err.Error(), "is recorded twice") || !strings.Contains(err.Error(), "results.jsonl:1 and ") {
		t.Errorf("a duplicate run: %v", err)
	}
	// A run of shard 2 copied into shard 1's results.
	root = runShards(t, d, 2)
	lines, _ = os.ReadFile(filepath.Join(root, "shard-2", FileResults))
	appendTo(t, filepath.Join(root, "shard-1", FileResults), strings.SplitAfter(string(lines), "\n")[0])
	if _, err := Merge(root); err == nil || !strings.Contains(err.Error(), "belongs to shard 2/2, not to this folder's shard 1/2") {
		t.Errorf("a run in the wrong shard: %v", err)
	}
	// A worker that declared two library versions.
	root = runShards(t, d, 1)
	path := filepath.Join(root, "shard-1", FileResults)
	data, _ := os.ReadFile(path)
	i := strings.LastIndex(string(data), `"library_version":"v1.2.3"`)
	os.WriteFile(path, []byte(string(data[:i])+`"library_version":"v1.2.4"`+string(data[i+len(`"library_version":"v1.2.3"`):])), 0o644)
	if _, err := Merge(root); err == nil || !strings.Contains(err.Error(), "ran at two library versions, v1.2.3") {
		t.Errorf("two library versions: %v", err)
	}
	// A folder that holds no shard.
	if _, err := Merge(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no shard.json in it") {
		t.Errorf("no shard: %v", err)
	}
	// A manifest edited by hand.
	root = runShards(t, d, 1)
	mp := filepath.Join(root, "shard-1", FileManifest)
	data, _ = os.ReadFile(mp)
	os.WriteFile(mp, []byte(strings.Replace(string(data), `"repetitions": 2`, `"repetitions": 3`, 1)), 0o644)
	if _, err := Merge(root); err == nil || !strings.Contains(err.Error(), "edited by hand?") {
		t.Errorf("an edited manifest: %v", err)
	}
}

func appendTo(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		t.Fatal(err)
	}
}

// The baseline hook: a subject's property cells as a card, gated by an
// ordinary baseline file.
func TestCardFeedsTheBaselineGate(t *testing.T) {
	d := runDefinition(t, 20)
	m, err := Merge(runShards(t, d, 2))
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Card("single")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]card.Outcome{}
	for _, r := range c.Rows {
		got[r.Property] = r.Outcome
	}
	want := map[string]card.Outcome{"crash/mid-acquire": card.Violated, "exclusion/no-faults": card.Held, "fencing/monotonic": card.Held}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("card rows %v, want %v", got, want)
	}
	if r, _ := c.Row("crash/mid-acquire"); !strings.HasPrefix(r.Finding, "held 17/20, violated 3/20: ") {
		t.Fatalf("the row does not carry the rates: %q", r.Finding)
	}
	known := func(string) bool { return true }
	b, err := card.ParseBaseline("b.txt", []byte("crash/mid-acquire held\nexclusion/no-faults held\nfencing/monotonic held\n"), known)
	if err != nil {
		t.Fatal(err)
	}
	diff := b.Compare(c)
	if diff.Exit() != 1 || len(diff.Regressions) != 1 || diff.Regressions[0].Property != "crash/mid-acquire" {
		t.Fatalf("diff %+v: want crash/mid-acquire regressed", diff)
	}
	// A cell of too few runs to say is a harness error, not a pass.
	small, _ := Merge(runShards(t, runDefinition(t, 3), 1))
	c, _ = small.Card("single")
	if r, _ := c.Row("exclusion/no-faults"); r.Outcome != card.HarnessError || !strings.Contains(r.Finding, "too few runs") {
		t.Fatalf("3 runs of held: %+v", r)
	}
	if _, err := m.Card("nope"); err == nil || !strings.Contains(err.Error(), `no subject "nope"`) {
		t.Fatalf("unknown subject: %v", err)
	}
}
