package scenarios

import (
	"fmt"

	"github.com/lockfault/lockfault/checker"
)

// maxEvidence bounds every count of an evidence section.
const maxEvidence = 1000

// EvidenceSpec is what a run must show in every cycle that looks safe, for
// "safe" to mean something (a cycle with a finding has its evidence): at
// least so many grants and completed critical sections (default 1 each),
// extends attempted and renewals, and the events that must follow the
// cycle's first fault. A cycle without it is the finding unknown.
type EvidenceSpec struct {
	Grants     *int     `yaml:"grants,omitempty"`
	Sections   *int     `yaml:"sections,omitempty"`
	Extends    int      `yaml:"extends,omitempty"`
	Renewals   int      `yaml:"renewals,omitempty"`
	AfterFault []string `yaml:"after_fault,omitempty"`
}

// Required is the scenario's evidence requirement, defaults filled in.
func (s *Scenario) Required() checker.Evidence {
	e := checker.DefaultEvidence
	if s.Evidence == nil {
		return e
	}
	if s.Evidence.Grants != nil {
		e.Grants = *s.Evidence.Grants
	}
	if s.Evidence.Sections != nil {
		e.Sections = *s.Evidence.Sections
	}
	e.Extends, e.Renewals, e.AfterFault = s.Evidence.Extends, s.Evidence.Renewals, s.Evidence.AfterFault
	return e
}

// validateEvidence checks the evidence section's bounds and words.
func (s *Scenario) validateEvidence() error {
	e := s.Evidence
	if e == nil {
		return nil
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"grants", e.Grants}, {"sections", e.Sections}, {"extends", &e.Extends}, {"renewals", &e.Renewals}} {
		if f.v != nil && (*f.v < 0 || *f.v > maxEvidence) {
			return s.ErrAt("evidence."+f.name, "want 0 to %d per cycle, got %d", maxEvidence, *f.v)
		}
	}
	for i, w := range e.AfterFault {
		if err := checker.ValidAfterFault(w); err != nil {
			return s.ErrAt(fmt.Sprintf("evidence.after_fault.%d", i), "%v", err)
		}
	}
	return nil
}
