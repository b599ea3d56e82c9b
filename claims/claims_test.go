package claims

import (
	"testing"
	"time"

	"github.com/lockfault/lockfault/pages"
)

// A scenario whose name starts with another's (gc-pause, gc-pause-fenced)
// is not a variant of it: compareVariants must leave its row alone.
func TestCompareVariantsOnlyTouchesItsOwnRows(t *testing.T) {
	rows := []pages.ClaimRow{
		{Scenario: "split", Matched: true},
		{Scenario: "split/jitter", Matched: true},
		{Scenario: "split-other", Matched: true, Rate: "overlap in 1/5 cycles"},
	}
	measures := map[string]map[string]measure{"split": {
		"":       {successRate: 0.3, meanAcquire: 2 * time.Second},
		"jitter": {successRate: 1, meanAcquire: time.Second},
	}}
	compareVariants(rows, measures)
	if !rows[0].Matched || rows[0].Note == "" {
		t.Errorf("base row: matched %v, note %q; want matched with a comparison note", rows[0].Matched, rows[0].Note)
	}
	if rows[2].Rate != "overlap in 1/5 cycles" || rows[2].Note != "" || !rows[2].Matched {
		t.Errorf("split-other was rewritten: %+v", rows[2])
	}

	// The base doing no worse than its variant fails the row.
	rows = []pages.ClaimRow{{Scenario: "split", Matched: true}, {Scenario: "split/jitter", Matched: true}}
	measures["split"][""] = measure{successRate: 1, meanAcquire: 2 * time.Second}
	compareVariants(rows, measures)
	if rows[0].Matched {
		t.Errorf("base as successful as the variant still matched: %+v", rows[0])
	}
}
