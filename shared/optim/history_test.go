package optim

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"browserfl/shared/mechanism"
)

// TestHistorySlack checks the float32 running sum's bound in both
// directions: the stored sum is within Slack of the exact sum (computed
// in 256-bit arithmetic) in every coordinate and in L2 norm, after
// messages chosen to make float32 rounding large (magnitudes over twelve
// orders, sums that cancel); and Slack is no looser than twice the
// rounding it bounds, 2^-24 sum ||w_k|| (a bound 1,000 times too loose
// would lift every running-sum limit by that much more).
func TestHistorySlack(t *testing.T) {
	const d = 64
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		var h History
		exact := make([]*big.Float, d)
		for i := range exact {
			exact[i] = new(big.Float).SetPrec(256)
		}
		var norms float64 // sum of ||w_k|| in float64, w_k = T_(k-1) + x_k
		x := make([]float64, d)
		for k := range 50 {
			scale := math.Pow(10, float64(rng.IntN(13)-6))
			for i := range x {
				x[i] = scale * rng.NormFloat64()
				if k%7 == 6 {
					x[i] = -float64(h.sum[i]) + 1e-9*rng.NormFloat64() // cancel the sum
				}
			}
			var ss float64
			for i, v := range x {
				if h.sum != nil {
					v += float64(h.sum[i])
				}
				ss += v * v
			}
			norms += math.Sqrt(ss)
			h.Add(x)
			for i, v := range x {
				exact[i].Add(exact[i], new(big.Float).SetPrec(256).SetFloat64(v))
			}
			var worst, l2 float64
			for i := range x {
				e := new(big.Float).SetPrec(256).SetFloat64(float64(h.sum[i]))
				e.Sub(e, exact[i])
				f, _ := e.Float64()
				worst = max(worst, math.Abs(f))
				l2 += f * f
			}
			l2 = math.Sqrt(l2)
			if !(worst <= h.Slack() && l2 <= h.Slack()) {
				t.Fatalf("trial %d, message %d: stored sum off by %.4g (coordinate), %.4g (norm), slack %.4g", trial, k, worst, l2, h.Slack())
			}
			if lim := 2 * norms / (1 << 24) * (1 + 1e-9); !(h.Slack() <= lim) {
				t.Fatalf("trial %d, message %d: slack %.4g above twice the rounding bound %.4g", trial, k, h.Slack(), lim)
			}
		}
	}
	var h History
	h.Add([]float64{1, 2})
	h.Reset()
	if h.Slack() != 0 || h.Len() != 0 {
		t.Errorf("after Reset: slack %v, %d messages", h.Slack(), h.Len())
	}
}

// TestHistoryRoundingIsAllowed guards both sides of the float32 sum. The
// honest side:
// a running sum whose exact value is under the coordinate limit, but
// whose stored first message was rounded up past the remaining room, must
// pass (without the slack in the limit the Checker refuses it). The
// dangerous side: the limits each test uses (the Rejection's) are the
// running sum's plus the slack terms and no more, for the coordinate
// test, the running sum's norm and the persistence test.
func TestHistoryRoundingIsAllowed(t *testing.T) {
	const d = 7850
	p := Params{Algorithm: "nc", M: 30, Cohort: 10, Rounds: 200, Batch: 16, Clip: 1, Eta: 0.5, Rho: 1.5}
	c, err := NewChecker(p, d)
	if err != nil {
		t.Fatal(err)
	}
	L2 := c.HistCoordLimit(2, 0)
	// A first message whose float32 is above it (rounded up).
	x1 := 0.6 * L2
	for float64(float32(x1)) <= x1 {
		x1 = math.Nextafter(x1, 0)
	}
	up := float64(float32(x1)) - x1
	x2 := L2 - x1 - up/2 // the exact sum x1 + x2 is up/2 under L2
	sum := new(big.Float).SetPrec(256).SetFloat64(x1)
	sum.Add(sum, new(big.Float).SetFloat64(x2))
	if sum.Cmp(new(big.Float).SetFloat64(L2)) >= 0 || !(float64(float32(x1))+x2 > L2) || x1 > c.CoordLimit(0) || x2 > c.CoordLimit(0) {
		t.Fatalf("test setting: x1 %.17g x2 %.17g limit %.17g", x1, x2, L2)
	}
	x := make([]float64, d)
	var h History
	x[5] = x1
	h.Add(x)
	x[5] = x2
	if err := c.Check(x, mechanism.Norm(x), &h); err != nil {
		t.Errorf("an exact sum under its limit refused after float32 rounding: %v", err)
	}
	// A sum over the limit by more than the slack is still refused, and
	// the limit used is the running sum's plus the slack, no more.
	x[5] = L2 - float64(float32(x1)) + 2*h.Slack() + 1e-9*L2
	var rej *Rejection
	if err := c.Check(x, mechanism.Norm(x), &h); !errors.As(err, &rej) || rej.Test != TestCoordinate {
		t.Fatalf("a sum over its limit by more than the slack: %v", err)
	}
	if want := L2 + h.Slack(); !(rej.Limit <= want*(1+1e-15) && rej.Limit > L2) {
		t.Errorf("coordinate limit used %.17g, want %.17g (limit %.17g + slack %.4g)", rej.Limit, want, L2, h.Slack())
	}
	// The running sum's norm: a dense drift over its limit.
	clear(x)
	n := 3
	h = History{}
	lim := c.HistBlockLimit(d, n, 0)
	for i := range x {
		x[i] = 1.01 * lim / float64(n) / math.Sqrt(d)
	}
	for range n - 1 {
		h.Add(x)
	}
	if err := c.Check(x, mechanism.Norm(x), &h); !errors.As(err, &rej) || rej.Test != TestBlock || rej.Hi-rej.Lo != d {
		t.Fatalf("a drift over the running sum's norm limit: %v", err)
	}
	if want := lim + h.Slack(); !(rej.Limit <= want*(1+1e-15) && rej.Limit > lim) {
		t.Errorf("norm limit used %.17g, want %.17g (limit %.17g + slack %.4g)", rej.Limit, want, lim, h.Slack())
	}
	// Persistence: a push kept in the running sum; the limit used is
	// PersistLimit + e (||T|| + ||T + x||) + 3 e^2, e the slack.
	h = History{FromStart: true}
	beta := 1.01 * math.Sqrt(c.PersistLimit(2, 0))
	for i := range x {
		x[i] = beta / math.Sqrt(d)
	}
	h.Add(x)
	clear(x)
	if err := c.Check(x, mechanism.Norm(x), &h); !errors.As(err, &rej) || rej.Test != TestPersist {
		t.Fatalf("a kept push: %v", err)
	}
	var tt float64
	for _, v := range h.sum {
		tt += float64(v) * float64(v)
	}
	e := h.Slack()
	want := c.PersistLimit(2, 0) + 2*e*math.Sqrt(tt) + 3*e*e // x = 0: T + x = T
	if !(rej.Limit <= want*(1+1e-15) && rej.Limit > c.PersistLimit(2, 0)) {
		t.Errorf("persistence limit used %.17g, want %.17g (limit %.17g, slack %.4g)", rej.Limit, want, c.PersistLimit(2, 0), e)
	}
}
