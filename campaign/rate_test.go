package campaign

import (
	"math"
	"testing"
)

// Known values of the 95 % Wilson score interval: Newcombe (1998), "Two-sided
// confidence intervals for the single proportion", Table I, method 3 (score
// interval without continuity correction), and the project's 20-run cells.
var wilsonKnown = []struct {
	k, n   int
	lo, hi float64
}{
	{81, 263, 0.2553, 0.3662},
	{15, 148, 0.0624, 0.1605},
	{0, 20, 0.0000, 0.1611},
	{1, 29, 0.0061, 0.1718},
	{19, 20, 0.7639, 0.9911},
	{20, 20, 0.8389, 1.0000},
}

func checkWilson(t *testing.T, name string, f func(k, n int) (float64, float64)) (bad int) {
	for _, c := range wilsonKnown {
		lo, hi := f(c.k, c.n)
		if math.Abs(lo-c.lo) > 5e-5 || math.Abs(hi-c.hi) > 5e-5 {
			bad++
			if t != nil {
				t.Errorf("%s(%d, %d) = [%.4f, %.4f], want [%.4f, %.4f]", name, c.k, c.n, lo, hi, c.lo, c.hi)
			}
		}
	}
	return bad
}

// wald is the broken interval the known values must catch: the normal
// approximation p ± z·sqrt(p(1-p)/n), which collapses to [1, 1] at 20/20.
func wald(k, n int) (float64, float64) {
	p := float64(k) / float64(n)
	h := Z95 * math.Sqrt(p*(1-p)/float64(n))
	return max(0, p-h), min(1, p+h)
}

func TestWilsonKnownValues(t *testing.T) {
	checkWilson(t, "Wilson", Wilson)
	if bad := checkWilson(nil, "wald", wald); bad < len(wilsonKnown)-1 {
		t.Fatalf("the Wald interval passes %d of %d known values: the table would not catch a wrong interval", len(wilsonKnown)-bad, len(wilsonKnown))
	}
	if lo, hi := Wilson(0, 0); lo != 0 || hi != 1 {
		t.Errorf("no runs: [%v, %v], want [0, 1]", lo, hi)
	}
	for n := 1; n <= 200; n++ {
		for k := 0; k <= n; k++ {
			lo, hi := Wilson(k, n)
			p := float64(k) / float64(n)
			if lo < 0 || hi > 1 || lo > p || hi < p {
				t.Fatalf("Wilson(%d, %d) = [%v, %v] does not hold %v within [0, 1]", k, n, lo, hi, p)
			}
		}
	}
}

// The match rule's edges: 19 of 20 matches and 18 does not; 12 of 12 is
// the fewest runs that can match; 44 of 50 and 84 of 100.
func TestMatchRuleEdges(t *testing.T) {
	cases := []struct {
		k, n  int
		clear bool
	}{
		{20, 20, true}, {19, 20, true}, {18, 20, false},
		{12, 12, true}, {11, 11, false}, {11, 12, false},
		{44, 50, true}, {43, 50, false},
		{84, 100, true}, {83, 100, false},
		{0, 0, false}, {1, 1, false}, {3, 3, false},
	}
	for _, c := range cases {
		if got := NewRate(Held, c.k, c.n).Clears(); got != c.clear {
			lo, _ := Wilson(c.k, c.n)
			t.Errorf("%d/%d (lower bound %.4f): clears %v, want %v", c.k, c.n, lo, got, c.clear)
		}
	}
	for n := 1; n < MinRunsToMatch; n++ {
		if NewRate(Held, n, n).Clears() {
			t.Errorf("%d/%d clears, but MinRunsToMatch is %d", n, n, MinRunsToMatch)
		}
	}
	if !NewRate(Held, MinRunsToMatch, MinRunsToMatch).Clears() {
		t.Errorf("%d/%d does not clear", MinRunsToMatch, MinRunsToMatch)
	}
	if s := NewRate(Held, 19, 20).String(); s != "held 19/20 (95 % CI 76–99 %)" {
		t.Errorf("rate text %q", s)
	}
}

// judge: an expected not-claimed needs every run not claimed (one is
// enough); a worker's default expectation with every run not claimed is
// not judged; a promised held that is never claimed differs.
func TestJudge(t *testing.T) {
	cases := []struct {
		exp  Expectation
		n    map[Outcome]int
		want Verdict
	}{
		{Expectation{NotClaimed, SourcePromise}, map[Outcome]int{NotClaimed: 1}, Matches},
		{Expectation{NotClaimed, SourcePromise}, map[Outcome]int{NotClaimed: 19, Held: 1}, Differs},
		{Expectation{Held, SourceDefault}, map[Outcome]int{NotClaimed: 20}, Unclaimed},
		{Expectation{Held, SourcePromise}, map[Outcome]int{NotClaimed: 20}, Differs},
		{Expectation{Held, SourcePromise}, map[Outcome]int{Held: 19, HarnessError: 1}, Matches},
		{Expectation{Held, SourcePromise}, map[Outcome]int{Held: 18, HarnessError: 2}, Differs},
		{Expectation{Violated, SourcePromise}, map[Outcome]int{Violated: 20}, Matches},
		{Expectation{Matched, SourceDefault}, map[Outcome]int{Matched: 19, Unknown: 1}, Matches},
		{Expectation{Held, SourceDefault}, map[Outcome]int{}, NoRuns},
	}
	for _, c := range cases {
		if _, got := judge(c.exp, c.n, total(c.n), false); got != c.want {
			t.Errorf("%+v with %v: %s, want %s", c.exp, c.n, got, c.want)
		}
	}
	// A hunt's cell: every run held, however few.
	for _, c := range []struct {
		n    map[Outcome]int
		want Verdict
	}{
		{map[Outcome]int{Held: 1}, Matches},
		{map[Outcome]int{Held: 3}, Matches},
		{map[Outcome]int{Held: 19, Violated: 1}, Differs},
		{map[Outcome]int{Held: 1, HarnessError: 1}, Differs},
		{map[Outcome]int{}, NoRuns},
	} {
		if _, got := judge(Expectation{Held, SourceDefault}, c.n, total(c.n), true); got != c.want {
			t.Errorf("a hunt's cell with %v: %s, want %s", c.n, got, c.want)
		}
	}
}

// total is the number of runs of a cell's outcome counts.
func total(n map[Outcome]int) int {
	runs := 0
	for _, k := range n {
		runs += k
	}
	return runs
}
