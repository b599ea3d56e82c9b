// Command huntable turns the lines BenchmarkHuntMutations appends to
// LOCKFAULT_HUNT_OUT into docs/HUNT.md's side-by-side table: per lock and
// search, the seeds run, how many found it, the median schedules and
// seconds to the first find (a seed that did not find counts as the whole
// budget, marked ">"), the set-aside locks apart; with both searches, the
// learning search's median seconds over the random search's per lock and
// how many locks are at half or less; then the median coverage of each
// search after 5, 10, 20 and 40 schedules.
//
//	go run ./bench/huntable < hunts.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
)

type point struct {
	Schedules int     `json:"schedules"`
	Seconds   float64 `json:"seconds"`
	Keys      int     `json:"keys"`
}

type line struct {
	Lock        string  `json:"lock"`
	SetAside    bool    `json:"set_aside"`
	Search      string  `json:"search"`
	Seed        int64   `json:"seed"`
	Found       string  `json:"found"`
	UntilFound  int     `json:"until_found"`
	FoundAfterS float64 `json:"found_after_s"`
	Tried       int     `json:"tried"`
	TookS       float64 `json:"took_s"`
	Coverage    []point `json:"coverage"`
}

func main() {
	var lines []line
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			fmt.Fprintln(os.Stderr, "huntable:", err)
			os.Exit(2)
		}
		lines = append(lines, l)
	}
	type cell struct{ lock, search string }
	by := map[cell][]line{}
	var searches []string
	setAside := map[string]bool{}
	for _, l := range lines {
		by[cell{l.Lock, l.Search}] = append(by[cell{l.Lock, l.Search}], l)
		if !slices.Contains(searches, l.Search) {
			searches = append(searches, l.Search)
		}
		setAside[l.Lock] = l.SetAside
	}
	sort.Strings(searches)
	var locks []string
	for l := range setAside {
		locks = append(locks, l)
	}
	sort.Strings(locks)
	var half []string // locks at half the random search's median time or less
	rows := 0
	for _, aside := range []bool{false, true} {
		fmt.Printf("\n%s\n\n| lock |", map[bool]string{false: "Tuned on (the other two thirds):", true: "Set aside (never tuned on):"}[aside])
		for _, s := range searches {
			fmt.Printf(" %s: found | schedules (median) | seconds (median) |", s)
		}
		ratio := slices.Contains(searches, "learn") && slices.Contains(searches, "random")
		if ratio {
			fmt.Print(" learn ÷ random (seconds) |")
		}
		fmt.Printf("\n|---|%s%s\n", strings.Repeat("---|---|---|", len(searches)), map[bool]string{true: "---|"}[ratio])
		for _, lk := range locks {
			if setAside[lk] != aside {
				continue
			}
			fmt.Printf("| %s |", lk)
			secs := map[string]float64{}
			for _, s := range searches {
				ls := by[cell{lk, s}]
				if len(ls) == 0 {
					fmt.Print(" | | |")
					continue
				}
				found := 0
				var n, t []float64
				for _, l := range ls {
					if l.Found != "" {
						found++
						n = append(n, float64(l.UntilFound))
						t = append(t, float64(int(l.FoundAfterS)))
					} else {
						// Not found within the budget: more than it, sorts last.
						n = append(n, float64(l.Tried)+0.5)
						t = append(t, float64(int(l.TookS))+0.5)
					}
				}
				secs[s] = median(t)
				fmt.Printf(" %d of %d | %s | %s |", found, len(ls), show(median(n)), show(secs[s]))
			}
			if ratio {
				r, atHalf := ratioOf(secs["learn"], secs["random"])
				if atHalf {
					half = append(half, lk)
				}
				fmt.Printf(" %s |", r)
				rows++
			}
			fmt.Println()
		}
	}
	if rows > 0 {
		fmt.Printf("\nAt most half the random search's median time: %d of %d locks (%s).\n", len(half), rows, strings.Join(half, ", "))
	}
	fmt.Printf("\nCoverage (distinct keys), median over every hunt of the search that ran that far:\n\n| search | 5 | 10 | 20 | 40 |\n|---|---|---|---|---|\n")
	for _, s := range searches {
		fmt.Printf("| %s |", s)
		for _, at := range []int{5, 10, 20, 40} {
			var ks []float64
			for _, l := range lines {
				if l.Search == s && len(l.Coverage) >= at {
					ks = append(ks, float64(l.Coverage[at-1].Keys))
				}
			}
			// (keys are whole numbers: median prints them as they are)
			fmt.Printf(" %s (%d) |", show(median(ks)), len(ks))
		}
		fmt.Println()
	}
}

// median of xs (the lower one of an even count; -1 for none); a value
// with .5 is a hunt that did not find (">budget").
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return -1
	}
	ys := slices.Clone(xs)
	slices.Sort(ys)
	return ys[(len(ys)-1)/2]
}

// show prints a median: "-" for none, ">n" for a hunt that did not find.
func show(m float64) string {
	switch {
	case m < 0:
		return "-"
	case m != float64(int(m)):
		return fmt.Sprintf(">%d", int(m))
	}
	return fmt.Sprintf("%d", int(m))
}

// ratioOf is the learning search's median seconds over the random
// search's: ">r" when the learning search's median hunt did not find (its
// time is more than its budget), "<r" when the random search's did not,
// empty when neither found or one is missing; and whether it is at half or
// less ("<r" an upper bound).
func ratioOf(learn, random float64) (string, bool) {
	missL, missR := learn != float64(int(learn)), random != float64(int(random))
	r := learn / random
	switch {
	case learn < 0 || random <= 0 || missL && missR:
		return "", false
	case missL:
		return fmt.Sprintf(">%.2f", r), false
	case missR:
		return fmt.Sprintf("<%.2f", r), r <= 0.5
	}
	return fmt.Sprintf("%.2f", r), r <= 0.5
}
