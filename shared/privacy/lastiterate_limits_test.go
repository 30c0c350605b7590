package privacy

import (
	"math"
	"testing"
)

// TestClippedStepCanExpand is the counterexample behind docs/privacy.md,
// "Private local training": Proposition 3.4(b) of Kong and Ribero states
// that the clipped step A(x) = x - lambda Clip_C(grad f(x)) is
// L_lambda(m, M)-Lipschitz for lambda <= 1/(2(m+M)), i.e. nonexpansive for
// convex f (m = 0). For the convex, 1-smooth f(z) = z1^2/2 + 10 z2, C = 1
// and lambda = 1/2 = 1/(2M), the points x = (0, 0) and y = (10, 50) move
// apart: every gradient is clipped, and the clipped directions differ
// more than the unclipped ones allow. (The proof bounds a sum of two
// squares by twice their sum and then drops the factor 2.) Theorems 4.4
// and 4.5 rest on that Lipschitz constant, so the product does not charge
// clipped DP-SGD with them (LastIterate documents this).
func TestClippedStepCanExpand(t *testing.T) {
	const C, lambda = 1.0, 0.5
	step := func(z [2]float64) [2]float64 {
		g := [2]float64{z[0], 10} // grad of z1^2/2 + 10 z2; Hessian diag(1, 0): convex, M = 1
		if n := math.Hypot(g[0], g[1]); n > C {
			g[0], g[1] = g[0]*C/n, g[1]*C/n
		}
		return [2]float64{z[0] - lambda*g[0], z[1] - lambda*g[1]}
	}
	x, y := [2]float64{0, 0}, [2]float64{10, 50}
	ax, ay := step(x), step(y)
	before := math.Hypot(x[0]-y[0], x[1]-y[1])
	after := math.Hypot(ax[0]-ay[0], ax[1]-ay[1])
	if L := LipschitzConstant(lambda, 0, 1); L != 1 {
		t.Fatalf("L_lambda(0, 1) = %v, the paper's nonexpansive case is 1", L)
	}
	if !(after > before*1.001) {
		t.Fatalf("clipped step moved the points from %v to %v apart: no expansion (counterexample broken)", before, after)
	}
	t.Logf("clipped step: distance %.4f -> %.4f (ratio %.5f > L_lambda = 1)", before, after, after/before)
}

// TestOnePassLastRecordCost documents why a one-pass local run is charged
// one step. A record in the last step batch of a one-pass run (T = l)
// enters only the final step, X_T = X_{T-1} - lambda g_T + N_T, with X_{T-1}
// independent of it: by composition and post-processing, the one Gaussian
// step alpha (2 lambda C/b)^2/(2 sigma^2) bounds it, and the paper's own
// Lemma A.3(a) chain started at X_{T-1} gives the same (theta_L(1) = 1).
// Theorem 4.5 as stated (eq. 21 with T - E l = 0) gives a value l/2 times
// smaller; its proof (Proposition A.4) needs T >= t* + 1, which fails for
// that record, so the product does not use it for this case.
func TestOnePassLastRecordCost(t *testing.T) {
	const alpha = 2.0
	for _, l := range []int{3, 10, 50} {
		p := LastIterate{Records: l * 4, Batch: 4, Steps: l, StepSize: 0.1, Clip: 1, Sigma: 0.05,
			CurvatureKnown: true, UpperCurvature: 1}
		thm45, err := p.WeaklyConvexRDP(alpha)
		if err != nil {
			t.Fatal(err)
		}
		s := 2 * p.StepSize * p.Clip / float64(p.Batch)
		oneStep := alpha * s * s / (2 * p.Sigma * p.Sigma)
		if got, want := oneStep/thm45, float64(l)/2; math.Abs(got-want) > 1e-9*want {
			t.Errorf("l = %d: one step / Theorem 4.5 = %v, want l/2 = %v", l, got, want)
		}
	}
}
