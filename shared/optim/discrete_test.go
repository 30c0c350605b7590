package optim

import (
	"errors"
	"math"
	"testing"

	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim/algo"
)

var privateAlgs = []string{"nc", "shared", "noisysgd", "cdpsgd", "soteria-sgd", "soteria-svrg", "soteria-saga"}

func newTestDevice(t *testing.T, p Params, seed byte) *device {
	t.Helper()
	m, _ := model.New("logreg", 5, 3)
	d, err := NewDevice(p, m, mechanism.NewStream(testSeed(seed), mechanism.PurposeSeeds))
	if err != nil {
		t.Fatal(err)
	}
	dv := d.(*device)
	if dv.a.NeedsLocalData() {
		if err := dv.SetLocalData(synthData(mechanism.NewStream(testSeed(seed+1), 0), p.LocalSize)); err != nil {
			t.Fatal(err)
		}
	}
	return dv
}

func TestMessagesLieOnTheGrid(t *testing.T) {
	// Every coordinate of every message of a private device is step times
	// an integer: the release is computed in integers (f64 payload, exact;
	// f32 payload, exact while the integers stay below 2^24, as here).
	for _, alg := range privateAlgs {
		for _, comp := range []string{"f64", "none"} {
			p := baseParams(alg)
			p.Compressor = comp
			dv := newTestDevice(t, p, 5)
			data := synthData(mechanism.NewStream(testSeed(6), 0), p.Batch)
			x := make([]float64, dv.dim)
			msg := make([]float64, dv.dim)
			for r := 1; r <= 5; r++ {
				u, err := dv.Prepare(Round{T: r, X: x, XPrev: x}, data)
				if err != nil {
					t.Fatal(err)
				}
				if err := mechanism.Decode(msg, u.Payload); err != nil {
					t.Fatal(err)
				}
				if dv.h != nil && r > 1 {
					// SoteriaFL sends C(x - h) with h a function of
					// earlier messages (post-processing, but not on the
					// grid); only the first message, h = 0, is checked.
					dv.Commit(r)
					continue
				}
				for i, v := range msg {
					if k := v / dv.step; k != math.Trunc(k) || math.Abs(k) >= 1<<24 {
						t.Fatalf("%s %s round %d coordinate %d: %v is %v grid steps", alg, comp, r, i, v, k)
					}
				}
				dv.Commit(r)
			}
		}
	}
}

func TestDiscreteChargeCoversRounding(t *testing.T) {
	// The ledger charges the continuous cost Delta^2 / (2 sigma^2). The
	// discrete release costs Delta_Z^2 / (2 sigma_Z^2) (CKS 2020, Thm. 14)
	// with Delta_Z = Delta/step + sqrt(d) (recomputed here: rounding moves
	// each coordinate by at most 1/2 on either side). The charge must be an
	// upper bound; the rounding slack is >= 1/2000 of Delta/step and
	// sigma_Z >= 10^4 here, so a calibration without the slack fails.
	for _, alg := range privateAlgs {
		p := baseParams(alg)
		p.Rounds = 200
		if p.Rho > 0 {
			p.Rho = 0.5
		} else {
			p.Epsilon = 1
		}
		dv := newTestDevice(t, p, 7)
		dz := dv.sens/dv.step + math.Sqrt(float64(dv.dim))
		check := func(n int, z int64, charge float64) {
			if z < 10000 {
				t.Fatalf("%s: sigma_Z = %d too small for this test's power", alg, z)
			}
			if got := dz * dz / (2 * float64(z) * float64(z)); got > charge {
				t.Errorf("%s participation %d: discrete release costs %v, the ledger charges %v", alg, n, got, charge)
			}
		}
		if alg == "nc" || alg == "shared" {
			for n := 1; n <= p.Rounds; n++ {
				z, err := dv.ncSigmaZ(n)
				if err != nil {
					t.Fatal(err)
				}
				s := algo.NCSigma(p, n)
				check(n, z, dv.sens*dv.sens/(2*s*s))
			}
			continue
		}
		check(1, dv.freshZ, dv.sens*dv.sens/(2*dv.fresh*dv.fresh))
	}
}

func TestDiscreteNoiseRegeneratesAcrossRestarts(t *testing.T) {
	// Y_i is stored as a seed and an integer sigma; a device restored from
	// its state (after Prepare, before Commit, and after Commit) has the
	// same Y_i bit for bit.
	p := baseParams("nc")
	p.Compressor = "f64"
	dv := newTestDevice(t, p, 9)
	data := synthData(mechanism.NewStream(testSeed(10), 0), p.Batch)
	x := make([]float64, dv.dim)
	want := make([]float64, dv.dim)
	got := make([]float64, dv.dim)
	for r := 1; r <= 3; r++ {
		if _, err := dv.Prepare(Round{T: r, X: x, XPrev: x}, data); err != nil {
			t.Fatal(err)
		}
		state, err := dv.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		dv2 := newTestDevice(t, p, 11)
		if err := dv2.UnmarshalBinary(state); err != nil {
			t.Fatal(err)
		}
		dv.Commit(r)
		dv2.Commit(r)
		dv.Noise(want)
		dv2.Noise(got)
		for i := range want {
			if math.Float64bits(want[i]) != math.Float64bits(got[i]) {
				t.Fatalf("round %d coordinate %d: Y_i %v, regenerated %v", r, i, want[i], got[i])
			}
		}
		if !dv.y.Has || dv.y.Sigma < 1 {
			t.Fatal("no noise state")
		}
		dv = dv2
	}
}

type leakyCompressor struct{ mechanism.Dense64 }

func TestDeviceRefusesUnsafeReleases(t *testing.T) {
	data := synthData(mechanism.NewStream(testSeed(12), 0), 2)
	x := make([]float64, 18)

	// A compressor not known to be a post-processing: refused before
	// anything is drawn or charged.
	for _, alg := range privateAlgs {
		p := baseParams(alg)
		dv := newTestDevice(t, p, 13)
		dv.spec.C = leakyCompressor{}
		if _, err := dv.Prepare(Round{T: 1, X: x, XPrev: x}, data); !errors.Is(err, algo.ErrUnsafe) {
			t.Errorf("%s: leaky compressor: err = %v, want algo.ErrUnsafe", alg, err)
		}
		if dv.ledger.Rho() != 0 || dv.n != 0 {
			t.Errorf("%s: refused release charged %v", alg, dv.ledger.Rho())
		}
	}
	// The trusted mode's devices send un-noised updates to a trusted
	// server anyway; they are not subject to this check.
	dvT := newTestDevice(t, baseParams("trusted"), 14)
	dvT.spec.C = leakyCompressor{}
	if _, err := dvT.Prepare(Round{T: 1, X: x, XPrev: x}, data); err != nil {
		t.Errorf("trusted: %v", err)
	}

	// A grid step outside the exact float64 range.
	p := baseParams("nc")
	p.Clip = 1e-305
	m, _ := model.New("logreg", 5, 3)
	if _, err := NewDevice(p, m, mechanism.NewStream(testSeed(1), 0)); !errors.Is(err, algo.ErrUnsafe) {
		t.Errorf("clip 1e-305: err = %v, want algo.ErrUnsafe", err)
	}

	// Noise beyond the exact sampler's range: refused at the release that
	// needs it, nothing charged. algo.Validate refuses a target surely past
	// the sampler for the session's dimension, d = 1 when it is not set,
	// as here: one release at rho_p = 1e-6 is noise 1e6 times the
	// sensitivity, within that check (1e6 x 1001 < 2^30), but this model's
	// grid (d = 18) puts it past the sampler.
	p = baseParams("nc")
	p.Rounds, p.Rho = 1, 1e-6
	dv := newTestDevice(t, p, 15)
	if _, err := dv.Prepare(Round{T: 1, X: x, XPrev: x}, data); !errors.Is(err, algo.ErrUnsafe) {
		t.Errorf("rho 1e-6, one round: err = %v, want algo.ErrUnsafe", err)
	}
	if dv.ledger.Rho() != 0 || dv.n != 0 {
		t.Errorf("refused release charged %v", dv.ledger.Rho())
	}
}
