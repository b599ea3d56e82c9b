package campaign

import (
	"fmt"
	"math"
)

// Z95 is the standard normal quantile of a two-sided 95 % interval.
const Z95 = 1.959963984540054

// MatchLowerBound is the rule by which a cell matches its expected
// outcome: the lower end of the 95 % Wilson score interval of that
// outcome's rate must be at least 0.75. At 20 runs that is 19 of 20 (the
// project's own bar for an expected outcome: 19/20 gives 0.764, 18/20
// gives 0.699); at 50 runs, 44; at 100, 84; and a cell of fewer than 12 runs can
// never match (12/12 gives 0.758, 11/11 gives 0.741): too few runs say
// nothing about a rate. A harness error or an unknown history counts as
// a run that did not show the expected outcome.
const MatchLowerBound = 0.75

// MinRunsToMatch is the fewest runs with which a cell can match (all of
// them showing the expected outcome).
const MinRunsToMatch = 12

// Wilson is the 95 % Wilson score interval of k successes in n trials
// (Wilson 1927; Newcombe 1998, method 3). n = 0 gives [0, 1].
func Wilson(k, n int) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	k = min(max(k, 0), n)
	p, nf, z2 := float64(k)/float64(n), float64(n), Z95*Z95
	den := 1 + z2/nf
	centre := (p + z2/(2*nf)) / den
	half := Z95 * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf)) / den
	lo, hi = max(0, centre-half), min(1, centre+half)
	if k == 0 {
		lo = 0
	}
	if k == n {
		hi = 1
	}
	return lo, hi
}

// Rate is k of n runs showing an outcome, with its Wilson interval.
type Rate struct {
	Outcome Outcome `json:"outcome"`
	K       int     `json:"k"`
	N       int     `json:"n"`
	Low     float64 `json:"low"`
	High    float64 `json:"high"`
}

// NewRate computes a rate.
func NewRate(o Outcome, k, n int) Rate {
	lo, hi := Wilson(k, n)
	return Rate{Outcome: o, K: k, N: n, Low: round4(lo), High: round4(hi)}
}

// Clears reports whether the rate clears MatchLowerBound.
func (r Rate) Clears() bool {
	lo, _ := Wilson(r.K, r.N)
	return r.N > 0 && lo >= MatchLowerBound
}

// String is "held 19/20 (95 % CI 76–99 %)".
func (r Rate) String() string {
	return fmt.Sprintf("%s %d/%d (95 %% CI %s–%s %%)", r.Outcome.Text(), r.K, r.N, pct(r.Low), pct(r.High))
}

func pct(x float64) string { return fmt.Sprintf("%.0f", math.Floor(x*100+0.5)) }

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
