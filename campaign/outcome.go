package campaign

import (
	"slices"
	"strings"

	"github.com/lockfault/lockfault/card"
)

// Outcome of one run of a campaign.
type Outcome string

// The outcomes a result line may carry. A property or a hunt seed ends
// held, violated, not-claimed or harness-error (as a card row does); a
// scenario ends matched or no-match (its own expectation met or not);
// unknown is a history that could not be judged, which is never a pass.
const (
	Held                 = Outcome(card.Held)
	Violated             = Outcome(card.Violated)
	NotClaimed           = Outcome(card.NotClaimed)
	HarnessError         = Outcome(card.HarnessError)
	Unknown              = Outcome(card.Unknown)
	Matched      Outcome = "matched"
	NoMatch      Outcome = "no-match"
)

// Outcomes lists every outcome, in the order tables show them.
var Outcomes = []Outcome{Held, Matched, Violated, NoMatch, NotClaimed, Unknown, HarnessError}

// Valid reports whether o is one of Outcomes.
func (o Outcome) Valid() bool { return slices.Contains(Outcomes, o) }

// Text is the outcome as a person reads it ("not claimed").
func (o Outcome) Text() string { return strings.ReplaceAll(string(o), "-", " ") }

// outcomesFor are the outcomes a run of an item kind can end with.
func outcomesFor(k ItemKind) []Outcome {
	if k == KindScenario {
		return []Outcome{Matched, NoMatch, Unknown, HarnessError}
	}
	return []Outcome{Held, Violated, NotClaimed, Unknown, HarnessError}
}

// expectable are the outcomes a definition may expect of an item kind:
// a harness error or an unknown history is never an expectation.
func expectable(k ItemKind) []Outcome {
	if k == KindScenario {
		return []Outcome{Matched, NoMatch}
	}
	return []Outcome{Held, Violated, NotClaimed}
}

func outcomeNames(os []Outcome) string {
	var s []string
	for _, o := range os {
		s = append(s, string(o))
	}
	return strings.Join(s, ", ")
}
