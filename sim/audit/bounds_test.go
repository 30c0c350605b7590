package audit

import (
	"math"
	"testing"
)

// binomCDF is P[Bin(n, p) <= k], summed term by term in log space (an
// independent check of the incomplete-beta form).
func binomCDF(k, n int, p float64) float64 {
	s := 0.0
	for i := 0; i <= k; i++ {
		ln, _ := math.Lgamma(float64(n + 1))
		li, _ := math.Lgamma(float64(i + 1))
		lni, _ := math.Lgamma(float64(n - i + 1))
		s += math.Exp(ln - li - lni + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
	}
	return s
}

func TestClopperPearson(t *testing.T) {
	for _, tc := range []struct {
		k, n  int
		alpha float64
	}{
		{0, 10, 0.05}, {1, 10, 0.05}, {5, 10, 0.025}, {9, 10, 0.05},
		{0, 200, 5e-4}, {3, 200, 5e-4}, {100, 200, 0.05}, {199, 200, 1e-3},
		{17, 1000, 0.025},
	} {
		up, err := ClopperPearsonUpper(tc.k, tc.n, tc.alpha)
		if err != nil {
			t.Fatal(err)
		}
		// The upper bound p has P[Bin(n, p) <= k] = alpha.
		if got := binomCDF(tc.k, tc.n, up); math.Abs(got/tc.alpha-1) > 1e-6 {
			t.Errorf("upper(%d/%d, %g) = %v: P[X <= k] = %v, want %v", tc.k, tc.n, tc.alpha, up, got, tc.alpha)
		}
		lo, err := ClopperPearsonLower(tc.k, tc.n, tc.alpha)
		if err != nil {
			t.Fatal(err)
		}
		if tc.k == 0 {
			if lo != 0 {
				t.Errorf("lower(0/%d) = %v, want 0", tc.n, lo)
			}
		} else if got := 1 - binomCDF(tc.k-1, tc.n, lo); math.Abs(got/tc.alpha-1) > 1e-6 {
			// The lower bound p has P[Bin(n, p) >= k] = alpha.
			t.Errorf("lower(%d/%d, %g) = %v: P[X >= k] = %v, want %v", tc.k, tc.n, tc.alpha, lo, got, tc.alpha)
		}
		if !(lo < float64(tc.k)/float64(tc.n) || tc.k == 0) || !(up > float64(tc.k)/float64(tc.n)) {
			t.Errorf("%d/%d: [%v, %v] does not contain the rate", tc.k, tc.n, lo, up)
		}
	}
	if up, _ := ClopperPearsonUpper(7, 7, 0.05); up != 1 {
		t.Errorf("upper(7/7) = %v, want 1", up)
	}
	for _, bad := range []struct {
		k, n  int
		alpha float64
	}{{-1, 10, 0.05}, {11, 10, 0.05}, {0, 0, 0.05}, {1, 10, 0}, {1, 10, 1}, {1, 10, math.NaN()}} {
		if _, err := ClopperPearsonUpper(bad.k, bad.n, bad.alpha); err == nil {
			t.Errorf("upper accepted %+v", bad)
		}
		if _, err := ClopperPearsonLower(bad.k, bad.n, bad.alpha); err == nil {
			t.Errorf("lower accepted %+v", bad)
		}
	}
}

func TestEpsilonLowerBound(t *testing.T) {
	// No errors in n trials of each kind: the one-sided upper bound at
	// level alpha/2 is u = 1 - (alpha/2)^(1/n), and the bound is
	// ln((1 - delta - u) / u).
	for _, n := range []int{100, 10000, 1000000} {
		alpha, delta := 0.05, 1e-5
		b, err := EpsilonLowerBound(Counts{Neg: n, Pos: n}, delta, alpha)
		if err != nil {
			t.Fatal(err)
		}
		u := -math.Expm1(math.Log(alpha/2) / float64(n))
		want := math.Log((1 - delta - u) / u)
		if math.Abs(b.Epsilon-want) > 1e-9*want {
			t.Errorf("n = %d: %v, want %v", n, b.Epsilon, want)
		}
	}
	// A coin flip is no evidence.
	b, err := EpsilonLowerBound(Counts{Neg: 1000, FP: 500, Pos: 1000, FN: 500}, 1e-5, 0.05)
	if err != nil || b.Epsilon != 0 {
		t.Errorf("coin flip: %v, %v; want 0", b.Epsilon, err)
	}
	// More errors never give a larger bound.
	prev := math.Inf(1)
	for fp := 0; fp <= 50; fp += 5 {
		b, err := EpsilonLowerBound(Counts{Neg: 10000, FP: fp, Pos: 10000, FN: 3000}, 1e-5, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		if b.Epsilon > prev {
			t.Errorf("FP %d: bound %v above %v with fewer errors", fp, b.Epsilon, prev)
		}
		prev = b.Epsilon
	}
	// Both directions of the test count: the second term alone.
	b1, _ := EpsilonLowerBound(Counts{Neg: 10000, FP: 3000, Pos: 10000, FN: 10}, 1e-5, 0.05)
	b2, _ := EpsilonLowerBound(Counts{Neg: 10000, FP: 10, Pos: 10000, FN: 3000}, 1e-5, 0.05)
	if b1.Epsilon != b2.Epsilon || !(b1.Epsilon > 0) {
		t.Errorf("mirror-image counts: %v and %v", b1.Epsilon, b2.Epsilon)
	}
	for _, d := range []float64{-1e-5, 1, math.NaN()} {
		if _, err := EpsilonLowerBound(Counts{Neg: 10, Pos: 10}, d, 0.05); err == nil {
			t.Errorf("delta %v accepted", d)
		}
	}
	if _, err := EpsilonLowerBound(Counts{Neg: 0, Pos: 10}, 1e-5, 0.05); err == nil {
		t.Error("no negatives accepted")
	}
}

func TestCountAt(t *testing.T) {
	out := []Outcome{{1, false}, {2, false}, {3, true}, {2, true}, {0, true}}
	c := CountAt(out, 2)
	if want := (Counts{Neg: 2, FP: 0, Pos: 3, FN: 2}); c != want {
		t.Errorf("threshold 2: %+v, want %+v", c, want)
	}
	c = CountAt(out, 0.5)
	if want := (Counts{Neg: 2, FP: 2, Pos: 3, FN: 1}); c != want {
		t.Errorf("threshold 0.5: %+v, want %+v", c, want)
	}
}

func TestSelectThreshold(t *testing.T) {
	// Separated classes: the chosen threshold separates them.
	var out []Outcome
	for i := range 500 {
		out = append(out, Outcome{float64(i % 50), false}, Outcome{float64(100 + i%50), true})
	}
	th, err := SelectThreshold(out, 1000, 1000, 1e-5, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if c := CountAt(out, th); c.FP != 0 || c.FN != 0 {
		t.Errorf("threshold %v: %+v", th, c)
	}
	if _, err := SelectThreshold(out[:1], 10, 10, 1e-5, 0.05); err == nil {
		t.Error("selection without positives accepted")
	}
	if _, err := SelectThreshold(out, 0, 10, 1e-5, 0.05); err == nil {
		t.Error("an empty evaluation accepted")
	}
}
