package coordinator

// Test helpers for the external test package.

// CoordinatorRecord builds a round record.
func CoordinatorRecord(t int, included ...string) RoundRecord {
	return RoundRecord{T: t, Cohort: included, Included: included}
}
