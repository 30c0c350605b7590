package privacy

import (
	"errors"
	"math"
	"testing"
)

func TestTheta(t *testing.T) {
	for _, L := range []float64{1, 1 + 1e-12, 1.0001, 1.1, math.Sqrt(3), 3} {
		for _, s := range []int{1, 2, 5, 40} {
			// Definition (6): L^(2(s-1)) / sum_{j<s} L^(2j).
			sum := 0.0
			for j := 0; j < s; j++ {
				sum += math.Pow(L, 2*float64(j))
			}
			want := math.Pow(L, 2*float64(s-1)) / sum
			got := Theta(L, s)
			if math.Abs(got-want) > 1e-9*want {
				t.Errorf("Theta(%v, %d) = %v, want %v", L, s, got, want)
			}
			if !(got > 0 && got <= 1) {
				t.Errorf("Theta(%v, %d) = %v outside (0, 1]", L, s, got)
			}
		}
	}
	if Theta(2, 0) != 0 {
		t.Error("Theta(L, 0) != 0")
	}
}

func TestLipschitzConstantRemarks(t *testing.T) {
	// Remarks after Proposition 3.4: L_lambda(0, M) = 1; lambda = 1/(2m),
	// M = 0 gives sqrt 3; m = M, lambda = 1/(2m) gives sqrt(5/2).
	tests := []struct{ lambda, m, M, want float64 }{
		{0.3, 0, 2, 1},
		{1.0 / (2 * 0.7), 0.7, 0, math.Sqrt(3)},
		{1.0 / (2 * 1.3), 1.3, 1.3, math.Sqrt(2.5)},
	}
	for _, tc := range tests {
		if got := LipschitzConstant(tc.lambda, tc.m, tc.M); math.Abs(got-tc.want) > 1e-14 {
			t.Errorf("L(%v, %v, %v) = %v, want %v", tc.lambda, tc.m, tc.M, got, tc.want)
		}
	}
}

func baseLastIterate() LastIterate {
	return LastIterate{
		Records: 1000, Batch: 50, Steps: 95, // l = 20, E = 4, T - El = 15
		StepSize: 0.05, Clip: 1, Sigma: 0.05,
		CurvatureKnown: true, WeakConvexity: 0.5, UpperCurvature: 4,
	}
}

func TestLastIterateConvexLimit(t *testing.T) {
	// As m -> 0 the weakly-convex bound (21) tends to the convex bound (22):
	// 4 alpha (lambda C/(b sigma))^2 (1/(T - E l) + E/l). theta_L(s) is
	// smooth in L^2 = 1 + O(lambda m), so the gap is O(m): we check it
	// shrinks at least proportionally to m, and is below 1e-6 relative at
	// m = 1e-7.
	p := baseLastIterate()
	const alpha = 3.0
	l := p.StepsPerPass()
	E := p.Steps / l
	r := p.StepSize * p.Clip / (float64(p.Batch) * p.Sigma)
	convex := 4 * alpha * r * r * (1/float64(p.Steps-E*l) + float64(E)/float64(l))
	p.WeakConvexity = 0
	got0, err := p.WeaklyConvexRDP(alpha)
	if err != nil || math.Abs(got0-convex) > 1e-12*convex {
		t.Fatalf("m=0: %v (%v), want (22) = %v", got0, err, convex)
	}
	prevGap := math.Inf(1)
	for _, m := range []float64{1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-7} {
		p.WeakConvexity = m
		got, err := p.WeaklyConvexRDP(alpha)
		if err != nil {
			t.Fatal(err)
		}
		gap := got - convex
		if gap <= 0 {
			t.Errorf("m=%v: weakly-convex bound %v not above convex %v", m, got, convex)
		}
		if gap > prevGap/5 { // m shrinks 10x per step (100x for the last)
			t.Errorf("m=%v: gap %v did not shrink with m (previous %v)", m, gap, prevGap)
		}
		prevGap = gap
	}
	if prevGap > 1e-6*convex {
		t.Errorf("gap at m=1e-7 is %v, want < 1e-6 relative", prevGap)
	}
	// The exact-multiple case T = E l: theta(0) = 0 replaces max{0, 1/0}.
	p.WeakConvexity = 0
	p.Steps = 80
	got, _ := p.WeaklyConvexRDP(alpha)
	if want := 4 * alpha * r * r * 4 / 20; math.Abs(got-want) > 1e-12*want {
		t.Errorf("T = E l: %v, want %v", got, want)
	}
}

func TestLastIterateCorollaryC2(t *testing.T) {
	// Corollary C.2: with lambda = 1/(2(M+m)) and l >= log 2 / log(1 + m
	// lambda), Theorem 4.5 gives D <= 4 alpha (lambda C/(b sigma))^2
	// [1 + 4 m E/(M+m)]. The corollary then states sigma_eps =
	// (C lambda/(2b)) sqrt((1 + 4mE/(M+m))/(alpha eps)) makes this <= eps;
	// substituting shows that sigma yields 16 alpha^2 eps instead, so the
	// printed sigma_eps is off by the factor 4 alpha. We test the
	// corollary's bound with the corrected
	// sigma_eps = (2 C lambda/b) sqrt(alpha (1 + 4mE/(M+m))/eps), which
	// satisfies it with equality, and that SigmaForRDP (which inverts (21)
	// exactly) never needs more.
	for _, m := range []float64{0.05, 0.3, 1} {
		for _, M := range []float64{0.5, 2} {
			for _, eps := range []float64{0.1, 1} {
				const alpha, b, C = 4.0, 10, 1.0
				lambda := 1 / (2 * (M + m))
				lbar := math.Log(2) / math.Log(1+m*lambda)
				l := int(math.Ceil(lbar))
				for _, E := range []int{1, 3, 10} {
					X := 1 + 4*m/(M+m)*float64(E)
					sigma := 2 * C * lambda / b * math.Sqrt(alpha*X/eps)
					p := LastIterate{Records: l * b, Batch: b, Steps: E * l, StepSize: lambda, Clip: C, Sigma: sigma,
						CurvatureKnown: true, WeakConvexity: m, UpperCurvature: M}
					got, err := p.WeaklyConvexRDP(alpha)
					if err != nil {
						t.Fatal(err)
					}
					if got > eps*(1+1e-12) {
						t.Errorf("m=%v M=%v eps=%v E=%d: rdp %v > eps", m, M, eps, E, got)
					}
					s, err := p.SigmaForRDP(alpha, eps)
					if err != nil || s > sigma*(1+1e-12) {
						t.Errorf("m=%v M=%v eps=%v E=%d: SigmaForRDP %v (%v) > corollary's %v", m, M, eps, E, s, err, sigma)
					}
					p.Sigma = s
					if got, _ := p.WeaklyConvexRDP(alpha); math.Abs(got-eps) > 1e-12*eps {
						t.Errorf("SigmaForRDP: rdp %v, want %v", got, eps)
					}
				}
			}
		}
	}
}

func TestLastIterateLemmaC1AndCorollaryC3(t *testing.T) {
	// Lemma C.1: for L > 1, xi > 1 and s >= log_L sqrt(xi/(xi-1)),
	// theta_L(s) <= xi (1 - L^-2).
	for _, L := range []float64{1.01, 1.2, 1.7} {
		for _, xi := range []float64{1.5, 2, 5} {
			s := int(math.Ceil(math.Log(math.Sqrt(xi/(xi-1))) / math.Log(L)))
			for _, ss := range []int{s, s + 1, 3 * s} {
				if got, bound := Theta(L, ss), xi*(1-1/(L*L)); got > bound*(1+1e-12) {
					t.Errorf("L=%v xi=%v s=%d: theta %v > %v", L, xi, ss, got, bound)
				}
			}
		}
	}
	// Corollary C.3: lambda <= min{1/sqrt(E), 1/(2(m+M))} implies
	// D <= 4 alpha (C/(b sigma))^2 [1 + theta_L(l)].
	p := baseLastIterate()
	p.Steps = 20 * 9 // E = 9
	p.StepSize = math.Min(1/3.0, 1/(2*(p.WeakConvexity+p.UpperCurvature)))
	const alpha = 2.0
	got, err := p.WeaklyConvexRDP(alpha)
	if err != nil {
		t.Fatal(err)
	}
	r := p.Clip / (float64(p.Batch) * p.Sigma)
	L := LipschitzConstant(p.StepSize, p.WeakConvexity, p.UpperCurvature)
	if bound := 4 * alpha * r * r * (1 + Theta(L, 20)); got > bound {
		t.Errorf("Corollary C.3: %v > %v", got, bound)
	}
}

func TestLastIterateOrdering(t *testing.T) {
	// Theorem 4.5 never exceeds Theorem 4.3 (theta <= 1, b >= 1, E <= T),
	// and it grows with m (L grows, theta_L(s) grows for s >= 2).
	p := baseLastIterate()
	for _, alpha := range []float64{1.5, 2, 10} {
		a, _ := p.CurvatureIndependentRDP(alpha)
		b, _ := p.WeaklyConvexRDP(alpha)
		r, _ := p.RDP(alpha)
		if b > a || r != b {
			t.Errorf("alpha=%v: Thm 4.5 %v, Thm 4.3 %v, RDP %v", alpha, b, a, r)
		}
		if want := 8 * alpha * 95 * 1.0; math.Abs(a-want) > 1e-12*want {
			t.Errorf("Thm 4.3 = %v, want %v", a, want)
		}
	}
	prev := 0.0
	for _, m := range []float64{0, 0.1, 0.5, 1, 2} {
		p.WeakConvexity = m
		p.StepSize = 1 / (2 * (m + p.UpperCurvature))
		p.Sigma = p.StepSize // keep lambda/sigma fixed
		b, err := p.WeaklyConvexRDP(2)
		if err != nil {
			t.Fatal(err)
		}
		if b <= prev {
			t.Errorf("m=%v: %v not above %v", m, b, prev)
		}
		prev = b
	}
	q := baseLastIterate()
	q.CurvatureKnown = false
	r, err := q.RDP(2)
	a, _ := q.CurvatureIndependentRDP(2)
	if err != nil || r != a {
		t.Errorf("unknown curvature: RDP %v (%v), want Thm 4.3 %v", r, err, a)
	}
	if _, err := q.WeaklyConvexRDP(2); err == nil {
		t.Error("Thm 4.5 without curvature accepted")
	}
	rho, err := baseLastIterate().ZCDP()
	r2, _ := baseLastIterate().RDP(2)
	if err != nil || math.Abs(rho-r2/2) > 1e-15 {
		t.Errorf("ZCDP %v (%v), want %v", rho, err, r2/2)
	}
	// Theorem 4.4 formula.
	d, err := baseLastIterate().BoundedDomainRDP(2, 0.5)
	L := LipschitzConstant(0.05, 0.5, 4)
	s := L*0.5 + 2*0.05*1/50
	if want := 2 * s * s / (2 * 0.05 * 0.05); err != nil || math.Abs(d-want) > 1e-12*want {
		t.Errorf("Thm 4.4: %v (%v), want %v", d, err, want)
	}
}

func TestLastIterateBadInput(t *testing.T) {
	mod := func(f func(*LastIterate)) LastIterate {
		p := baseLastIterate()
		f(&p)
		return p
	}
	bad := map[string]LastIterate{
		"T < l":            mod(func(p *LastIterate) { p.Steps = 19 }),
		"b does not div k": mod(func(p *LastIterate) { p.Batch = 30 }),
		"k = 0":            mod(func(p *LastIterate) { p.Records = 0 }),
		"b = 0":            mod(func(p *LastIterate) { p.Batch = 0 }),
		"lambda 0":         mod(func(p *LastIterate) { p.StepSize = 0 }),
		"lambda too big":   mod(func(p *LastIterate) { p.StepSize = 1 / (2 * 4.5) * 1.001 }),
		"clip < 0":         mod(func(p *LastIterate) { p.Clip = -1 }),
		"sigma 0":          mod(func(p *LastIterate) { p.Sigma = 0 }),
		"sigma NaN":        mod(func(p *LastIterate) { p.Sigma = math.NaN() }),
		"m < 0":            mod(func(p *LastIterate) { p.WeakConvexity = -0.1 }),
		"M NaN":            mod(func(p *LastIterate) { p.UpperCurvature = math.NaN() }),
		"overflow":         mod(func(p *LastIterate) { p.Sigma = 1e-300; p.CurvatureKnown = false }),
	}
	for name, p := range bad {
		r, err := p.RDP(2)
		if err == nil {
			t.Errorf("%s: no error (rdp %v)", name, r)
		} else if !errors.Is(err, ErrInvalidParameter) && !errors.Is(err, ErrNotFinite) {
			t.Errorf("%s: %v wraps no sentinel", name, err)
		}
	}
	if _, err := baseLastIterate().RDP(1); err == nil {
		t.Error("alpha = 1 accepted")
	}
	if _, err := baseLastIterate().BoundedDomainRDP(2, 0); err == nil {
		t.Error("diameter 0 accepted")
	}
}
