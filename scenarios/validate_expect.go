package scenarios

import (
	"fmt"
	"strings"

	"github.com/lockfault/lockfault/checker"
)

// validateExpectations checks the verdict the scenario expects and the
// extra classes it tolerates.
func (s *Scenario) validateExpectations() error {
	if len(s.Expect) == 0 {
		return s.ErrAt("expect", "missing; the verdict this scenario expects (%s)", strings.Join(checker.Classes, ", "))
	}
	for _, list := range []struct {
		name  string
		items []string
	}{{"expect", s.Expect}, {"allow", s.Allow}} {
		if len(list.items) > len(checker.Classes) {
			return s.ErrAt(list.name, "%d classes (allowed: at most %d, each class once)", len(list.items), len(checker.Classes))
		}
	}
	for i, c := range s.Expect {
		if err := checker.ValidClass(c); err != nil {
			if err := s.checkText(fmt.Sprintf("expect.%d", i), c, MaxNameLen); err != nil {
				return err
			}
			return s.ErrAt(fmt.Sprintf("expect.%d", i), "%v", err)
		}
	}
	for i, c := range s.Allow {
		if err := checker.ValidClass(c); err != nil || c == checker.ClassSafe {
			if err := s.checkText(fmt.Sprintf("allow.%d", i), c, MaxNameLen); err != nil {
				return err
			}
			var allowed []string
			for _, k := range checker.Classes {
				if k != checker.ClassSafe {
					allowed = append(allowed, k)
				}
			}
			return s.ErrAt(fmt.Sprintf("allow.%d", i), "%q: allow lists extra classes tolerated (allowed: %s)", c, strings.Join(allowed, ", "))
		}
	}
	return nil
}
