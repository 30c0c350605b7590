package coordinator

import "browserfl/coordinator/store"

// Test helpers for the external test package.

// CoordinatorRecord builds a round record.
func CoordinatorRecord(t int, included ...string) store.RoundRecord {
	return store.RoundRecord{T: t, Cohort: included, Included: included}
}
