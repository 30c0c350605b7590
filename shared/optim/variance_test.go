package optim

import (
	"math"
	"testing"

	"browserfl/shared/mechanism"
	"browserfl/shared/model"
)

// fullClippedMean is (1/n) sum_j clip_S(grad f_j(x)), the quantity the
// SoteriaFL estimators are unbiased for.
func fullClippedMean(m model.Model, x []float64, p Params, dv *device) []float64 {
	out := make([]float64, m.Dim())
	g := make([]float64, m.Dim())
	for _, s := range dv.vr.local {
		m.Grad(g, x, s)
		mechanism.Clip(g, p.S())
		for i := range g {
			out[i] += g[i] / float64(len(dv.vr.local))
		}
	}
	return out
}

func TestVarianceReducedEstimators(t *testing.T) {
	for _, alg := range []string{"soteria-svrg", "soteria-saga"} {
		for _, b := range []int{20, 3} {
			p := baseParams(alg)
			p.M, p.Cohort, p.Batch, p.LocalSize = 1, 1, b, 20
			p.Rounds = 3000
			p.Epsilon = 1e6
			m, _ := model.New("logreg", 5, 3)
			dvi, err := NewDevice(p, m, mechanism.NewStream(testSeed(31), 0))
			if err != nil {
				t.Fatal(err)
			}
			dv := dvi.(*device)
			data := synthData(mechanism.NewStream(testSeed(32), 0), p.LocalSize)
			if err := dv.SetLocalData(data); err != nil {
				t.Fatal(err)
			}
			rng := mechanism.NewStream(testSeed(33), 0)
			x0 := make([]float64, m.Dim())
			rng.FillNormal(x0, 1)
			x := make([]float64, m.Dim())
			rng.FillNormal(x, 1)
			// Round 1 at x0 fixes the snapshot/table there; afterwards
			// the query point is x, away from the memories.
			if _, err := dv.Prepare(Round{T: 1, X: x0}, nil); err != nil {
				t.Fatal(err)
			}
			dv.Commit(1)
			want := fullClippedMean(m, x, p, dv)
			R := 1
			if b < p.LocalSize {
				R = 2000
			}
			mean := make([]float64, m.Dim())
			sq := make([]float64, m.Dim())
			clean := make([]float64, m.Dim())
			for r := 0; r < R; r++ {
				if _, err := dv.Prepare(Round{T: r + 2, X: x}, nil); err != nil {
					t.Fatal(err)
				}
				dv.Clean(clean)
				// SAGA rows move to x when committed; abort keeps the
				// memories at x0 so every draw has the same distribution.
				dv.Abort(r + 2)
				for i, v := range clean {
					mean[i] += v / float64(R)
					sq[i] += v * v / float64(R)
				}
			}
			// Clean is the estimate rounded to the nearest point of the
			// release grid (deterministic, so it shifts the mean by at
			// most half a grid step per coordinate).
			half := dv.step / 2
			for i := range want {
				// b = n: the estimator is exactly the full clipped mean
				// (up to the rounding of ~3n additions of terms <= S) up
				// to the grid rounding.
				tol := half + 1e-12
				if R > 1 {
					// b < n: mean of R i.i.d. draws within 5 standard
					// errors estimated from the sample (CLT); union over 18
					// coordinates keeps the false-failure rate < 1e-5.
					sd := math.Sqrt(math.Max(sq[i]-mean[i]*mean[i], 0))
					tol = 5*sd/math.Sqrt(float64(R)) + half + 1e-12
				}
				if math.Abs(mean[i]-want[i]) > tol {
					t.Errorf("%s b=%d coordinate %d: mean estimate %v, full clipped gradient %v (tol %g)", alg, b, i, mean[i], want[i], tol)
				}
			}
		}
	}
}

func TestSoteriaShiftTracksDeviceShifts(t *testing.T) {
	// With partial participation and lost updates, the server shift stays
	// (1/M) sum_i h_i: a device's shift moves only when its message is
	// included, by gamma * C(.), and the server adds gamma/M of the same
	// decoded message.
	p := baseParams("soteria-sgd")
	p.Compressor = "randk:0.3"
	s := newSimulation(t, p, 41, 400)
	s.lose = 0.3
	for r := 1; r <= 30; r++ {
		s.round()
		want := make([]float64, len(s.q))
		for _, dv := range s.devs {
			for i, v := range dv.(*device).h {
				want[i] += v / float64(p.M)
			}
		}
		got := s.srv.(Estimator).Estimate()
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-12*float64(r*p.M)*math.Max(1, maxAbs(want)) {
				t.Fatalf("round %d coordinate %d: server shift %v, mean device shift %v", r, i, got[i], want[i])
			}
		}
	}
}
