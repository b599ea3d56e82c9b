package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/report"
)

// Issue 31: a run whose workers exit right after ready printed "evidence: 1
// of 1 cycles with evidence ..., 0 grants, 0 critical sections", and its
// report.md said "unknown in 0 of 1 cycles" beside an unknown finding. The
// summary and the report are computed from the same evidence: no cycle
// without a grant has evidence, and the unknown finding counts in the
// cycle it spans.
func TestSummaryAgreesWithCountsWhenWorkersExitAfterReady(t *testing.T) {
	cmd, _ := script(t, `read l
echo '{"type":"ready","pid":1,"lock":"mine","needs":"single"}'
exit 0`)
	opt := Options{Backend: "process", ReportsDir: t.TempDir()}
	out, err := Run(context.Background(), externalPlan(t, cmd, "standalone-control", 3), opt)
	if out == nil || out.Result == nil {
		t.Fatalf("no result: %v", err)
	}
	res := out.Result
	ev := res.Evidence
	if ev == nil {
		t.Fatal("no evidence summary")
	}
	sum := report.Summary(out.Dir, out.Meta, res)
	t.Logf("summary:\n%s", sum)
	if ev.Grants == 0 && ev.Shown != 0 {
		t.Errorf("evidence %q: a cycle with 0 grants counted as with evidence", ev.Text())
	}
	if hits, of := res.Rate(checker.ClassUnknown); contains(res.Observed, checker.ClassUnknown) && hits == 0 {
		t.Errorf("an unknown finding, but unknown in %d of %d cycles", hits, of)
	}
	md, err := os.ReadFile(filepath.Join(out.Dir, report.FileMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(md), "unknown in 0 of") {
		t.Errorf("report.md says unknown in 0 cycles beside an unknown finding")
	}
	assertNoLeftovers(t, out.Meta.RunID)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
