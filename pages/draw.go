package pages

import "github.com/lockfault/lockfault/card"

// Drawers draw the pages' pictures. This package draws none itself, so a
// binary that writes cards (a user's test binary) does not link a plotting
// library; a nil drawer leaves its picture out, and the page does not refer
// to it. Package plots sets them when imported (simulate imports it).
type Drawers struct {
	Card   func(path string, c *card.Card) error                       // suite.png: one lock's card
	Cards  func(path string, props []string, cards []*card.Card) error // the lock × property grid
	Claims func(path string, m *Matrix) error                          // the claim × lock matrix
}

var drawers Drawers

// SetDrawers makes the pages draw their pictures with d. Call it from an
// init function: the writers read it without a lock.
func SetDrawers(d Drawers) { drawers = d }
