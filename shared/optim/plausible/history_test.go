package plausible

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
)

// blocksOf returns the tests' blocks of k consecutive coordinates of a
// vector of length d: [0, k), [k, 2k), ..., the last shorter.
func blocksOf(k, d int) [][2]int {
	var b [][2]int
	for lo := 0; lo < d; lo += k {
		b = append(b, [2]int{lo, min(lo+k, d)})
	}
	return b
}

// TestHistorySlack checks the float32 running sum's bounds in both
// directions. The stored sum is within Slack(k) of the exact sum
// (computed in 256-bit arithmetic) on every block of each size the tests
// read (1, 8, 64, 512, d), after messages chosen to make float32 rounding
// large: magnitudes over twelve orders, sums that cancel, values below
// float32's normal range (where its error is absolute, not relative). And
// each Slack(k) is no looser than twice the rounding it bounds,
// sum over adds of 2^-24 max_block ||w_k|| + 2^-150 sqrt(k) (a bound 1,000
// times too loose, or one level given another's, would lift that test's
// limits).
func TestHistorySlack(t *testing.T) {
	for _, d := range []int{5, 100, 513, 1100} { // 1100: two whole blocks of 512 and a shorter one
		historySlack(t, d)
	}
}

func historySlack(t *testing.T, d int) {
	t.Helper()
	sizes := []int{1, 8, 64, 512, d}
	rng := rand.New(rand.NewPCG(1, uint64(d)))
	for trial := range 12 {
		var h History
		exact := make([]*big.Float, d)
		for i := range exact {
			exact[i] = new(big.Float).SetPrec(256)
		}
		loose := make([]float64, len(sizes)) // twice the rounding, per size
		x := make([]float64, d)
		w := make([]float64, d)
		for k := range 40 {
			scale := math.Pow(10, float64(rng.IntN(13)-6))
			switch {
			case trial%4 == 3:
				scale = 1e-40 // float32 subnormals
			case trial%4 == 2 && k%2 == 1:
				scale = 1e-42
			}
			for i := range x {
				x[i] = scale * rng.NormFloat64()
				if trial%3 == 1 && i < d-d%8 {
					x[i] *= 1e-6 // the weight in the last, shorter blocks
				}
				if k%7 == 6 {
					x[i] = -float64(h.sum[i]) + scale*1e-9*rng.NormFloat64() // cancel the sum
				}
				w[i] = x[i]
				if h.sum != nil {
					w[i] += float64(h.sum[i])
				}
			}
			for s, size := range sizes {
				var most float64
				for _, b := range blocksOf(size, d) {
					var ss float64
					for _, v := range w[b[0]:b[1]] {
						ss += v * v
					}
					most = max(most, math.Sqrt(ss))
				}
				loose[s] += 2 * (most/(1<<24) + 0x1p-150*math.Sqrt(float64(size)))
			}
			h.Add(x)
			off := make([]float64, d)
			for i, v := range x {
				exact[i].Add(exact[i], new(big.Float).SetPrec(256).SetFloat64(v))
				e := new(big.Float).SetPrec(256).SetFloat64(float64(h.sum[i]))
				e.Sub(e, exact[i])
				off[i], _ = e.Float64()
			}
			for s, size := range sizes {
				for _, b := range blocksOf(size, d) {
					var ss float64
					for _, v := range off[b[0]:b[1]] {
						ss += v * v
					}
					if !(math.Sqrt(ss) <= h.Slack(size)) {
						t.Fatalf("d = %d, trial %d, message %d: stored sum off by %.4g on coordinates %d-%d, slack %.4g", d, trial, k, math.Sqrt(ss), b[0], b[1]-1, h.Slack(size))
					}
				}
				if !(h.Slack(size) <= loose[s]*(1+1e-9)) {
					t.Fatalf("d = %d, trial %d, message %d: slack of blocks of %d %.4g above twice the rounding bound %.4g", d, trial, k, size, h.Slack(size), loose[s])
				}
			}
		}
	}
}

// TestHistoryReset: Reset empties the sum and every slack, and a history
// reset at one dimension takes another.
func TestHistoryReset(t *testing.T) {
	var h History
	h.Add([]float64{1, 2})
	h.Reset()
	for _, k := range []int{1, 8, 64, 512, 2} {
		if h.Slack(k) != 0 || h.Len() != 0 {
			t.Errorf("after Reset: slack %v for blocks of %d, %d messages", h.Slack(k), k, h.Len())
		}
	}
	h.Add([]float64{3, 4, 5})
	if len(h.sum) != 3 || h.sum[0] != 3 || h.sum[2] != 5 || h.Len() != 1 {
		t.Errorf("after Reset and an Add of dimension 3: sum %v, %d messages", h.sum, h.Len())
	}
}

// TestHistoryRoundingIsAllowed guards both sides of the float32 sum. The
// honest side: a running sum whose exact value is under the coordinate
// limit, but whose stored first message was rounded up past the remaining
// room, must pass (without the slack in the limit the Checker refuses
// it). The dangerous side: the limit each test uses (the Rejection's) is
// the running sum's plus that test's slack terms, no more, for the
// coordinate test, a block of 8, the running sum's norm and the
// persistence test; and a history whose slack no checked history can
// reach is refused.
func TestHistoryRoundingIsAllowed(t *testing.T) {
	const d = 7850
	p := optim.Params{Algorithm: "nc", M: 30, Cohort: 10, Rounds: 200, Batch: 16, Clip: 1, Eta: 0.5, Rho: 1.5}
	c, err := NewChecker(p, d)
	if err != nil {
		t.Fatal(err)
	}
	exactly := func(what string, got, want float64) {
		t.Helper()
		if !(math.Abs(got-want) <= 1e-15*want) {
			t.Errorf("%s: limit used %.17g, want %.17g", what, got, want)
		}
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
	// A sum over the limit by more than the slack is refused.
	x[5] = L2 - float64(float32(x1)) + 2*h.Slack(1) + 1e-9*L2
	var rej *Rejection
	if err := c.Check(x, mechanism.Norm(x), &h); !errors.As(err, &rej) || rej.Test != TestCoordinate || !rej.History {
		t.Fatalf("a sum over its limit by more than the slack: %v", err)
	}
	exactly("coordinate", rej.Limit, L2+h.Slack(1))

	// A block of 8 pushed every round, each coordinate under its
	// limits: the third running sum is over the block's limit. A thin
	// dense background makes the whole vector's slack larger than the
	// block's, so that a limit given the wrong one is seen.
	n := 3
	lim8 := c.HistBlockLimit(8, n, 0)
	for i := range x {
		x[i] = 0.1 * c.HistBlockLimit(d, n, 0) / float64(n) / math.Sqrt(d)
	}
	for i := 8; i < 16; i++ {
		x[i] = 1.01 * lim8 / float64(n) / math.Sqrt(8)
	}
	h = History{}
	for range n - 1 {
		h.Add(x)
	}
	if err := c.Check(x, mechanism.Norm(x), &h); !errors.As(err, &rej) || rej.Test != TestBlock || rej.Lo != 8 || rej.Hi != 16 {
		t.Fatalf("a block of 8 over its running-sum limit: %v", err)
	}
	exactly("block of 8", rej.Limit, lim8+h.Slack(8))
	if !(h.Slack(d) > 1.2*h.Slack(8)) {
		t.Fatalf("test setting: the whole vector's slack %.4g should be above the block's %.4g", h.Slack(d), h.Slack(8))
	}

	// The running sum's norm: a dense drift over its limit.
	clear(x)
	lim := c.HistBlockLimit(d, n, 0)
	for i := range x {
		x[i] = 1.01 * lim / float64(n) / math.Sqrt(d)
	}
	h = History{}
	for range n - 1 {
		h.Add(x)
	}
	if err := c.Check(x, mechanism.Norm(x), &h); !errors.As(err, &rej) || rej.Test != TestBlock || rej.Hi-rej.Lo != d {
		t.Fatalf("a drift over the running sum's norm limit: %v", err)
	}
	exactly("norm", rej.Limit, lim+h.Slack(d))

	// Persistence: a push kept in the running sum, then a small message
	// that changes its norm; the limit used is PersistLimit +
	// e (||T|| + ||T + x||) + 3 e^2, e the slack of the whole vector.
	h = History{FromStart: true}
	beta := 1.01 * math.Sqrt(c.PersistLimit(2, 0))
	for i := range x {
		x[i] = beta / math.Sqrt(d)
	}
	h.Add(x)
	for i := range x {
		x[i] = 0.2 * beta / math.Sqrt(d) * float64(1-2*(i%3%2))
	}
	if err := c.Check(x, mechanism.Norm(x), &h); !errors.As(err, &rej) || rej.Test != TestPersist {
		t.Fatalf("a kept push: %v", err)
	}
	var tt, uu float64
	for i, v := range h.sum {
		tt += float64(v) * float64(v)
		uu += (float64(v) + x[i]) * (float64(v) + x[i])
	}
	if math.Abs(math.Sqrt(uu)-math.Sqrt(tt)) < 0.01*math.Sqrt(tt) {
		t.Fatalf("test setting: the second message should change the sum's norm (%.4g, %.4g)", math.Sqrt(tt), math.Sqrt(uu))
	}
	e := h.Slack(d)
	exactly("persistence", rej.Limit, c.PersistLimit(2, 0)+e*(math.Sqrt(tt)+math.Sqrt(uu))+3*e*e)

	// The last, shorter block of 8 (coordinates 7848-7849): its limit is
	// a block of 2's plus the slack of the blocks of 8.
	lim2 := c.HistBlockLimit(2, n, 0)
	for i := range x { // the background, as above
		x[i] = 0.1 * c.HistBlockLimit(d, n, 0) / float64(n) / math.Sqrt(d)
	}
	for i := d - 2; i < d; i++ {
		x[i] = 1.01 * lim2 / float64(n) / math.Sqrt(2)
	}
	h = History{}
	for range n - 1 {
		h.Add(x)
	}
	if err := c.Check(x, mechanism.Norm(x), &h); !errors.As(err, &rej) || rej.Test != TestBlock || rej.Lo != d-2 || rej.Hi != d {
		t.Fatalf("the last block over its running-sum limit: %v", err)
	}
	exactly("the last block of 8", rej.Limit, lim2+h.Slack(8))

	// The guard: a whole-vector slack just under 8 x 2^-23 n times the
	// running sum's norm limit at the cap passes it, just over is refused.
	clear(x)
	for _, tc := range []struct {
		scale   float64
		refused bool
	}{{1 - 1e-9, false}, {1 + 1e-9, true}} {
		h = History{}
		h.Add(x)
		h.slack[len(h.slack)-1] = tc.scale * 8 * histRound * c.HistBlockLimit(d, 1, 0)
		err := c.Check(x, 0, &h)
		if got := errors.As(err, &rej) && rej.Test == TestNorm && rej.History; got != tc.refused || (!tc.refused && err != nil) {
			t.Errorf("a slack of %v x the guard's limit: %v", tc.scale, err)
		}
	}

	// Histories no run of checked messages produces: one that cancelled
	// a huge sum (T = 0, slack about 2^-23 sqrt(d) 3e38), and one whose
	// float32 sum overflowed (infinite slack). Both refused.
	for _, tc := range []struct {
		name string
		adds []float64
	}{{"a cancelled huge sum", []float64{3e38, -3e38}}, {"an overflowed sum", []float64{1e200}}} {
		h = History{FromStart: true}
		for _, v := range tc.adds {
			for i := range x {
				x[i] = v
			}
			h.Add(x)
		}
		clear(x)
		if err := c.Check(x, 0, &h); !errors.As(err, &rej) || !rej.History || rej.Test != TestNorm {
			t.Errorf("%s (slack %.4g): %v", tc.name, h.Slack(d), err)
		}
	}
}
