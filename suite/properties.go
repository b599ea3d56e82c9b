package suite

// The suite: one line per property.
func init() {
	register(Property{Name: "exclusion/no-faults", Scenario: "exclusion-no-faults",
		Explanation: "with no faults at all, no two clients ever hold the lock at once and no update is lost"})
}
