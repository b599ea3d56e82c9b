package report

import "github.com/lockfault/lockfault/checker"

// FindingSentence is a finding in one line, as the card and a failing
// test show it: what kind of thing happened, then the details.
func FindingSentence(f checker.Finding) string {
	s := headline(f)
	if f.Detail != "" {
		s += " " + f.Detail
	}
	return s
}
