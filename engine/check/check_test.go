package check_test

import (
	"errors"
	"math"
	"testing"

	"browserfl/engine/check"
	"browserfl/shared/optim/plausible"
)

// TestNormOnly: the bound alone, inclusive; NaN is refused.
func TestNormOnly(t *testing.T) {
	g := check.NormOnly(2)
	for _, tc := range []struct {
		norm float64
		ok   bool
	}{{0, true}, {2, true}, {math.Nextafter(2, 3), false}, {math.NaN(), false}, {math.Inf(1), false}} {
		err := g.Check(nil, tc.norm, nil)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, plausible.ErrImplausible)) {
			t.Errorf("norm %v: %v, want ok %v", tc.norm, err, tc.ok)
		}
	}
	if g.NormBound() != 2 {
		t.Fatal("NormBound")
	}
}
