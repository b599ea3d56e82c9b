package builtin

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/lockfault/lockfault/campaign"
	"github.com/lockfault/lockfault/hunt"
	"github.com/lockfault/lockfault/pages"
	"github.com/lockfault/lockfault/runner"
)

// HuntSchedules is how many schedules one hunt item (one seed) tries.
const HuntSchedules = 10

// Hunter returns the Executor's Hunt: one seed is a hunt of HuntSchedules
// schedules (drawn by the item's search, hunt.Searches; "" the default)
// that stops at its first violation, shrinks it and measures the
// minimal scenario over rateRuns runs; known are the subject's known
// limits (hunt.Options.KnownViolations: their faults are never drawn).
// Held: nothing found; violated: the violation, with its minimal scenario;
// unknown: no schedule proved anything.
func Hunter(opt runner.Options, rateRuns int) func(ctx context.Context, subj runner.Subject, known []string, seed int64, search, dir string) campaign.Result {
	return func(ctx context.Context, subj runner.Subject, known []string, seed int64, search, dir string) campaign.Result {
		var res campaign.Result
		o := hunt.Options{Seed: seed, Runs: HuntSchedules, RateRuns: rateRuns, Run: opt, Dir: dir, KnownViolations: slices.Clone(known), Search: search}
		r, err := hunt.Run(ctx, subj, o)
		switch {
		case err != nil:
			res.Outcome, res.Finding = campaign.HarnessError, err.Error()
		case r.Interrupted:
			res.Outcome, res.Finding = campaign.HarnessError, "interrupted"
		case len(r.Findings) > 0:
			f := r.Findings[0]
			res.Outcome, res.Observed = campaign.Violated, []string{f.Fingerprint.Class}
			res.Finding = fmt.Sprintf("%s: %s (minimal scenario: %d faults, reproduces in %d of %d runs)", f.Fingerprint.ID(), f.Fingerprint.Detail, len(f.Minimal.Events), f.Rate[0], f.Rate[1])
			res.Report = filepath.Join(r.Dir, pages.FileHuntCard)
		case r.Inconclusive == len(r.Tried):
			res.Outcome, res.Finding = campaign.Unknown, fmt.Sprintf("none of the %d schedules proved anything", len(r.Tried))
		default:
			res.Outcome, res.Report = campaign.Held, filepath.Join(r.Dir, pages.FileHuntCard)
			res.Observed = []string{"safe"}
		}
		return res
	}
}
