package report_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/internal/reportfixture"
	"github.com/lockfault/lockfault/report"
)

// Without a drawer linked (this test binary links no plots) a run's report
// has every other file and neither writes nor names timeline.png; with one,
// the picture is drawn where Write says and the report shows it.
func TestWriteDrawsTheTimelineOnlyWithADrawer(t *testing.T) {
	ev, meta := reportfixture.Race(), reportfixture.RaceMeta()
	res := reportfixture.Check(t, ev, &meta)

	files := func(dir string) []string {
		data, err := os.ReadFile(filepath.Join(dir, report.FileJSON))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range []string{report.FileTimeline, report.FileLinearize, report.FileMarkdown, report.FileHTML} {
			if strings.Contains(string(data), `"`+f+`"`) {
				out = append(out, f)
			}
		}
		return out
	}
	bare := t.TempDir()
	if err := report.Write(bare, meta, ev, res); err != nil {
		t.Fatal(err)
	}
	if got := files(bare); slices.Contains(got, report.FileTimeline) || len(got) != 3 {
		t.Errorf("report.json lists %v without a drawer; want the other three files and no %s", got, report.FileTimeline)
	}
	if _, err := os.Stat(filepath.Join(bare, report.FileTimeline)); err == nil {
		t.Errorf("%s written without a drawer", report.FileTimeline)
	}
	md, _ := os.ReadFile(filepath.Join(bare, report.FileMarkdown))
	if strings.Contains(string(md), report.FileTimeline) {
		t.Errorf("report.md names %s, which was not drawn", report.FileTimeline)
	}

	var drawn []string
	report.SetTimeline(func(path string, m report.Meta, evs []history.Event, r *checker.Result) error {
		drawn = append(drawn, path)
		return os.WriteFile(path, []byte("picture"), 0o644)
	})
	defer report.SetTimeline(nil)
	with := t.TempDir()
	if err := report.Write(with, meta, ev, res); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(with, report.FileTimeline); len(drawn) != 1 || drawn[0] != want {
		t.Errorf("drawer called for %v; want once for %s", drawn, want)
	}
	if got := files(with); !slices.Contains(got, report.FileTimeline) {
		t.Errorf("report.json lists %v with a drawer; want %s among them", got, report.FileTimeline)
	}
	md, _ = os.ReadFile(filepath.Join(with, report.FileMarkdown))
	if !strings.Contains(string(md), "]("+report.FileTimeline+")") {
		t.Errorf("report.md does not show the drawn %s", report.FileTimeline)
	}
}
