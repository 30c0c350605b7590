package coordinator

import (
	"slices"
	"testing"
)

// TestEvalDue: evaluations after rounds 1, 2, 3 and 5, then on the
// schedule, at the last round and at an early end; never with no schedule.
func TestEvalDue(t *testing.T) {
	var got []int
	for r := 1; r <= 27; r++ {
		if evalDue(r, 10, 27, false) {
			got = append(got, r)
		}
	}
	if want := []int{1, 2, 3, 5, 10, 20, 27}; !slices.Equal(got, want) {
		t.Errorf("evaluated rounds %v, want %v", got, want)
	}
	for _, tc := range []struct {
		t, every, rounds int
		ended, want      bool
	}{
		{4, 5, 100, false, false},
		{4, 5, 100, true, true},
		{1, 0, 100, false, false},
		{100, 0, 100, true, false},
		{6, 1, 100, false, true},
	} {
		if got := evalDue(tc.t, tc.every, tc.rounds, tc.ended); got != tc.want {
			t.Errorf("evalDue(%d, %d, %d, %v) = %v, want %v", tc.t, tc.every, tc.rounds, tc.ended, got, tc.want)
		}
	}
}
