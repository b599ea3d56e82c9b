// Package plots draws lockfault's pictures with gonum/plot: a run's
// timeline.png (one lane per client, holds as bars, fault windows shaded,
// overlaps in red), a lock's card (suite.png), the lock × property grid and
// the claims matrix. Importing it (for its side effect) makes packages
// report and pages draw them; without it they write their files with no
// picture, so a user's test binary links no plotting library unless its
// test imports this package. simulate imports it.
package plots

import (
	"github.com/lockfault/lockfault/pages"
	"github.com/lockfault/lockfault/report"
)

func init() {
	report.SetTimeline(writeTimeline)
	pages.SetDrawers(pages.Drawers{Card: writeCardPNG, Cards: writeCardsPNG, Claims: writeClaimsPNG})
}
