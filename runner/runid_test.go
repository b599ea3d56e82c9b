package runner

import "testing"

// IsRunID knows NewRunID's ids, and only names of their form.
func TestIsRunIDKnowsNewRunID(t *testing.T) {
	if id := NewRunID(); !IsRunID(id) {
		t.Errorf("IsRunID(%q) = false for a NewRunID", id)
	}
	for _, name := range []string{"", "0-notes", "20261129-150000", "20261129-150000-a1b2c", "20261129-150000-A1B2C3", "x20261129-150000-a1b2c3"} {
		if IsRunID(name) {
			t.Errorf("IsRunID(%q) = true", name)
		}
	}
}
