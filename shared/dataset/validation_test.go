package dataset

import (
	"reflect"
	"testing"
)

func numbered(n int) Set {
	s := Set{Name: "n", Features: 1, Classes: 3}
	for i := range n {
		s.Samples = append(s.Samples, Sample{X: []float32{float32(i)}, Label: i % 3})
	}
	return s
}

func ids(s Set) []int {
	out := make([]int, len(s.Samples))
	for i, x := range s.Samples {
		out[i] = int(x.X[0])
	}
	return out
}

// TestValidationSplit: the split is disjoint, complete, of the stated
// size, keeps the training order, and is the same on every call (and,
// through the pinned first indices, on every platform: math/rand/v2's PCG
// is specified bit for bit).
func TestValidationSplit(t *testing.T) {
	s := numbered(600)
	fit, val, err := ValidationSplit(s)
	if err != nil {
		t.Fatal(err)
	}
	if val.Len() != 100 || fit.Len() != 500 {
		t.Fatalf("sizes fit %d, validation %d; want 500, 100", fit.Len(), val.Len())
	}
	seen := make([]int, 600)
	for _, i := range append(ids(fit), ids(val)...) {
		seen[i]++
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("sample %d appears %d times in fit + validation", i, c)
		}
	}
	f := ids(fit)
	for k := 1; k < len(f); k++ {
		if f[k] <= f[k-1] {
			t.Fatalf("fit part not in the original order at %d: %d after %d", k, f[k], f[k-1])
		}
	}
	fit2, val2, _ := ValidationSplit(s)
	if !reflect.DeepEqual(ids(fit), ids(fit2)) || !reflect.DeepEqual(ids(val), ids(val2)) {
		t.Error("two calls give different splits")
	}
	if got := ids(val)[:4]; !reflect.DeepEqual(got, pinnedValidation) {
		t.Errorf("first held-out samples %v, want %v (the split changed: every tuning result depends on it)", got, pinnedValidation)
	}
	for _, n := range []int{0, -1, 600, 601} {
		if _, _, err := s.HoldOut(n, 1); err == nil {
			t.Errorf("HoldOut(%d) of 600 accepted", n)
		}
	}
	if _, _, err := ValidationSplit(numbered(5)); err == nil {
		t.Error("validation split of 5 samples (0 held out) accepted")
	}
}

// pinnedValidation is the first four samples ValidationSplit holds out of 600
// (recorded when the split was introduced).
var pinnedValidation = []int{547, 181, 102, 206}
