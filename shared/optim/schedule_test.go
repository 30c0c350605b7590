package optim

import (
	"math"
	"slices"
	"testing"

	"browserfl/shared/dataset"
)

func TestSampleCohortDeterministicAndDistinct(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e", "f", "g"}
	orig := slices.Clone(ids)
	for _, tc := range []struct{ k, want int }{{0, 0}, {3, 3}, {7, 7}, {9, 7}, {-1, 0}} {
		got := SampleCohort(ids, tc.k, 42, 5)
		if len(got) != tc.want {
			t.Errorf("k = %d: %d ids, want %d", tc.k, len(got), tc.want)
		}
		seen := map[string]bool{}
		for _, id := range got {
			if seen[id] {
				t.Errorf("k = %d: %q twice", tc.k, id)
			}
			seen[id] = true
		}
		if again := SampleCohort(ids, tc.k, 42, 5); !slices.Equal(got, again) {
			t.Errorf("k = %d: not a function of (seed, round): %v then %v", tc.k, got, again)
		}
	}
	if !slices.Equal(ids, orig) {
		t.Error("SampleCohort modified its input")
	}
	if slices.Equal(SampleCohort(ids, 3, 42, 5), SampleCohort(ids, 3, 42, 6)) &&
		slices.Equal(SampleCohort(ids, 3, 42, 6), SampleCohort(ids, 3, 42, 7)) {
		t.Error("three rounds drew the same cohort")
	}
}

// TestSampleCohortUniform: over R = 30,000 rounds each of n = 10 ids is in
// a cohort of k = 3 with probability 0.3, so its count is Binomial(R, 0.3):
// mean 9,000, standard deviation 79.4. A band of 5 standard deviations
// fails a uniform sampler with probability below 6e-6 over the 10 ids; a
// sampler that favours any id by 10% (mean 9,900) is 11 deviations out.
func TestSampleCohortUniform(t *testing.T) {
	const n, k, R = 10, 3, 30000
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	count := make([]int, n)
	for r := 1; r <= R; r++ {
		for _, id := range SampleCohort(ids, k, 7, r) {
			count[id]++
		}
	}
	mean := float64(R) * k / n
	sd := math.Sqrt(float64(R) * k / n * (1 - float64(k)/n))
	for id, c := range count {
		if math.Abs(float64(c)-mean) > 5*sd {
			t.Errorf("id %d in %d cohorts, want %.0f ± %.0f", id, c, mean, 5*sd)
		}
	}
}

func TestMinibatchOrderAndWrap(t *testing.T) {
	data := make([]dataset.Sample, 5)
	for i := range data {
		data[i] = dataset.Sample{Label: i}
	}
	dst := make([]dataset.Sample, 3)
	cur := 0
	var got []int
	for range 4 {
		Minibatch(dst, data, cur)
		for _, s := range dst {
			got = append(got, s.Label)
		}
		cur = NextCursor(cur, len(dst), len(data), false)
	}
	if want := []int{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1}; !slices.Equal(got, want) {
		t.Errorf("multi-pass order %v, want %v", got, want)
	}
	if c := NextCursor(3, 3, 5, true); c != 6 {
		t.Errorf("single pass: cursor %d, want 6 (never wrapped: the caller stops)", c)
	}
}
