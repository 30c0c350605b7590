package optim

import (
	"fmt"
	"math"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim/algo"
)

// The device step's estimator without ghost clipping and the fused
// clip: every per-sample quantity formed, checked finite in one pass, its
// norm computed in another, scaled in a third, its norm recomputed in a
// fourth, then added. Kept here as the reference the
// equivalence tests compare against and the benchmarks time interleaved
// with the product's code (device.refMean).

func refCheckFinite(v []float64) error {
	acc := 0.0
	for _, x := range v {
		acc += x - x
	}
	if acc == 0 {
		return nil
	}
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("mechanism: non-finite value %v at index %d", x, i)
		}
	}
	return nil
}

func refFastNorm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	if s > 1e300 || (s < 1e-300 && s != 0) || math.IsInf(s, 0) || math.IsNaN(s) {
		return mechanism.Norm(v)
	}
	return math.Sqrt(s)
}

func refClip(v []float64, maxNorm float64) float64 {
	if !(maxNorm > 0) {
		clear(v)
		return 0
	}
	n := refFastNorm(v)
	if n <= maxNorm {
		return 1
	}
	f := maxNorm / n
	for i := range v {
		v[i] *= f
	}
	for k := 0; k < 8 && refFastNorm(v) > maxNorm; k++ {
		g := 1 - 1e-15*float64(int(1)<<k)
		for i := range v {
			v[i] *= g
		}
		f *= g
	}
	return f
}

// refMean is the unfused batch loop of Prepare for estSGD and estMu2.
func (dv *device) refMeanFn() func(v []float64, r Round, batch []dataset.Sample, bound float64) error {
	return func(v []float64, r Round, batch []dataset.Sample, bound float64) error {
		b := float64(len(batch))
		for j, s := range batch {
			dst := dv.g
			if dv.a.Kind.Est == algo.EstMu2 {
				t := float64(r.T)
				model.GradDiff(dv.m, dst, t, r.X, t-1, r.XPrev, s)
			} else {
				dv.m.Grad(dst, r.X, s)
			}
			if err := refCheckFinite(dst); err != nil {
				return fmt.Errorf("sample %d: optim: gradient: %w", j, err)
			}
			if bound > 0 {
				refClip(dst, bound)
			}
			for i, x := range dst {
				v[i] += x / b
			}
		}
		return nil
	}
}

// TestBatchMeanMatchesReference checks that the product's batch estimator
// (ghost clipping for logistic regression, the fused two-pass clip for
// the MLP) gives the unfused loop's result up to float64 rounding: the L2
// difference of the two estimates is at most 1e-15 of the L2 norm of the
// coordinates' absolute sums (the scale of the terms: where terms cancel,
// the estimate itself is smaller and its rounding relatively larger) at
// most 4e-15, over bounds that clip every sample, some, or none. Both sides
// round differently (the norm's sum of squares in another order, the
// scaling folded into one product): each norm has a rounding error of up
// to a few sqrt(d) 2^-53, and measured differences are at most 1.4e-15 of
// the terms' scale (2.9e-15 of the estimate's norm). A clipping factor off by
// even 1e-12, a sample dropped or a norm computed on the wrong vector
// fails it.
func TestBatchMeanMatchesReference(t *testing.T) {
	rng := mechanism.NewStream(testSeed(9), 0)
	for _, mname := range []string{"logreg", "mlp"} {
		for _, alg := range []string{"mu2", "sgd"} {
			for _, density := range []float64{0.19, 0.5, 1} {
				for _, clip := range []float64{1e-3, 0.3, 3, 1e6} {
					name := fmt.Sprintf("%s/%s/density=%v/clip=%v", mname, alg, density, clip)
					p := table1Params(alg, 16)
					p.Model, p.Clip, p.Rho = mname, clip, 0
					m, err := model.New(mname, 784, 10)
					if err != nil {
						t.Fatal(err)
					}
					dvI, err := NewDevice(p, m, mechanism.NewStream(testSeed(1), 0))
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					dv := dvI.(*device)
					batch := make([]dataset.Sample, p.Batch)
					for i := range batch {
						x := make([]float32, 784)
						for j := range x {
							if rng.Float64() < density {
								x[j] = float32(rng.Float64())
							}
						}
						batch[i] = dataset.Sample{X: x, Label: rng.Intn(10)}
					}
					x := make([]float64, m.Dim())
					xp := make([]float64, m.Dim())
					rng.FillNormal(x, 0.05)
					rng.FillNormal(xp, 0.05)
					r := Round{T: 7, X: x, XPrev: xp}
					got := make([]float64, m.Dim())
					want := make([]float64, m.Dim())
					if err := dv.batchMean(got, r, batch, p.S()); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if err := dv.refMeanFn()(want, r, batch, p.S()); err != nil {
						t.Fatalf("%s: reference: %v", name, err)
					}
					// The scale of the sum: ||sum_j |term_j| / b||, the L2 norm
					// of the coordinates' absolute sums (the estimate itself
					// can be much smaller where terms cancel).
					abs := make([]float64, m.Dim())
					one := make([]float64, m.Dim())
					for _, s := range batch {
						clear(one)
						if err := dv.refMeanFn()(one, r, []dataset.Sample{s}, p.S()); err != nil {
							t.Fatal(err)
						}
						for i, v := range one {
							abs[i] += math.Abs(v) / float64(len(batch))
						}
					}
					diff := make([]float64, len(got))
					for i := range diff {
						diff[i] = got[i] - want[i]
					}
					rel := mechanism.Norm(diff) / mechanism.Norm(abs)
					t.Logf("%s: %.3g of the terms' scale, %.3g of the estimate's norm", name, rel, mechanism.Norm(diff)/mechanism.Norm(want))
					if !(rel <= 4e-15) {
						t.Errorf("%s: difference %.3g of the terms' scale from the reference, want <= 4e-15", name, rel)
					}
				}
			}
		}
	}
}

// TestGhostClipBound: a batch of b copies of one sample whose gradient
// norm is far above S must give a mean of norm S (within float64
// rounding) on the ghost path: not above (the privacy bound; clipping at
// 1.1 S fails here) and not far below (the sample was clipped, not
// dropped).
func TestGhostClipBound(t *testing.T) {
	for _, alg := range []string{"mu2", "sgd"} {
		p := baseParams(alg)
		p.Clip, p.Batch = 0.5, 4
		m, _ := model.New("logreg", 5, 3)
		if _, ok := m.(model.Factored); !ok {
			t.Fatal("logreg does not implement model.Factored: the ghost path is not tested")
		}
		dv, err := NewDevice(p, m, mechanism.NewStream(testSeed(4), 0))
		if err != nil {
			t.Fatal(err)
		}
		s := dataset.Sample{X: []float32{40, -30, 20, 10, 5}, Label: 1}
		batch := []dataset.Sample{s, s, s, s}
		x := make([]float64, m.Dim())
		xp := make([]float64, m.Dim())
		for i := range x {
			x[i] = 0.1 * float64(i%3)
		}
		if _, err := dv.Prepare(Round{T: 1, X: x, XPrev: xp}, batch); err != nil {
			t.Fatal(err)
		}
		c := make([]float64, m.Dim())
		dv.(Introspector).Clean(c)
		if n := mechanism.Norm(c); n > p.S()*(1+1e-12) || n < p.S()*(1-1e-12) {
			t.Errorf("%s: ||mean of clipped|| = %v, want S = %v", alg, n, p.S())
		}
	}
}
