package scenarios

import "strings"

// validateName checks the scenario's name (it names the report folder), its
// claim, description and comparison.
func (s *Scenario) validateName() error {
	if s.Name == "" {
		return s.ErrAt("name", "missing; give the scenario a name")
	}
	if err := s.checkText("name", s.Name, MaxNameLen); err != nil {
		return err
	}
	if strings.ContainsAny(s.Name, "/\\ \t\n") || s.Name == "." || s.Name == ".." {
		return s.ErrAt("name", "%q: must be one word without slashes (it names the report folder)", s.Name)
	}
	if err := s.checkText("claim", s.Claim, MaxNameLen); err != nil {
		return err
	}
	if err := s.checkText("compare", s.Compare, MaxNameLen); err != nil {
		return err
	}
	return s.checkMultiLine("description", s.Description, MaxDescriptionLen)
}
