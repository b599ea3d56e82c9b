package report

import (
	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
)

// TimelineFunc draws a run's timeline.png into path: one lane per client,
// holds as bars, fault windows shaded, overlaps in red.
type TimelineFunc func(path string, meta Meta, events []history.Event, res *checker.Result) error

// timeline is the drawer Write calls, nil when none is linked: this package
// draws nothing itself, so a binary that writes reports (a user's test
// binary) does not link a plotting library. Package plots sets it when
// imported (simulate imports it; a test may import it for its side effect).
var timeline TimelineFunc

// SetTimeline makes Write draw timeline.png with f. Call it from an init
// function: Write reads it without a lock.
func SetTimeline(f TimelineFunc) { timeline = f }
