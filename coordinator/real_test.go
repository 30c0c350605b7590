package coordinator_test

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"browserfl/coordinator"
	"browserfl/coordinator/store"
	"browserfl/device"
	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/wire"
)

// blobs returns n samples of two Gaussian blobs in 4 dimensions with
// centres +-1 per coordinate and standard deviation 0.5 (seeded).
func blobs(n int, seed uint64) []dataset.Sample {
	rng := rand.New(rand.NewPCG(seed, 3))
	out := make([]dataset.Sample, n)
	for i := range out {
		label := rng.IntN(2)
		x := make([]float32, 4)
		for k := range x {
			x[k] = float32(float64(2*label-1) + 0.5*rng.NormFloat64())
		}
		out[i] = dataset.Sample{X: x, Label: label}
	}
	return out
}

// realRun runs the product's "nc" halves (shared/optim) through the
// coordinator and real websockets, with device faults of probability p,
// and checks the noise-cancellation identity after every round with the
// halves' own introspection (optim.Estimator, optim.Introspector). It
// returns the final model's accuracy on held-out blobs.
//
// With an error-feedback or lossy compressor the identity also involves
// the residuals and float32 rounding, so it is checked only for "f64".
func realRun(t *testing.T, algorithm, compressor string, p float64) float64 {
	sess := wire.SessionParams{Name: "real", Dim: 10, DeadlineMillis: 300, Algorithm: algorithm, Model: "logreg",
		Features: 4, Classes: 2, M: 6, Cohort: 3, Rounds: 40, Batch: 8, Clip: 1, Eta: 0.05, Rho: 50,
		Compressor: compressor}
	params := sess
	var seed mechanism.Seed
	seed[0] = 1
	server, err := optim.NewServer(params, make([]float64, sess.Dim), mechanism.NewStream(seed, 0))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var mu sync.Mutex
	qs := map[int][]float64{}
	c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Server: server, Store: st,
		MinDevices: 3, Seed: 5, Logger: quietLogger(),
		OnCommit: func(round int) {
			mu.Lock()
			qs[round] = server.(optim.Estimator).Estimate()
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{srv: nil}
	h.srv = newTestServer(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()

	var f faults
	rts, hist := realDevices(t, ctx, "ws"+h.srv.URL[4:]+"/ws", sess, p, 350*time.Millisecond, &f)
	runDevices(t, ctx, rts)
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	if p > 0 && (f.disconnects.Load() == 0 || f.lates.Load() == 0 || f.drops.Load() == 0) {
		t.Fatal("no fault of some kind was injected")
	}
	if compressor == "f64" {
		checkRealInvariant(t, qs, hist, sess.Cohort)
	}
	mdl, _ := model.New("logreg", 4, 2)
	acc, _ := model.Evaluate(mdl, server.Model(), blobs(2000, 999))
	return acc
}

// TestRealAlgorithmOverWire runs the untrusted (nc) and trusted modes
// with the exact f64 uplink and nc with an error-feedback rand-k uplink.
// In trusted mode Estimate is the exact q and Y_i = 0, so the same
// identity reads q = (1/m) sum_i S_i.
func TestRealAlgorithmOverWire(t *testing.T) {
	tests := []struct{ algorithm, compressor string }{
		{"nc", "f64"},
		{"trusted", "f64"},
		{"nc", "ef+randk:0.5"},
	}
	for _, tc := range tests {
		t.Run(tc.algorithm+"/"+tc.compressor, func(t *testing.T) {
			calm := realRun(t, tc.algorithm, tc.compressor, 0)
			faulty := realRun(t, tc.algorithm, tc.compressor, 0.1)
			t.Logf("held-out accuracy: undisturbed %.3f, with faults %.3f", calm, faulty)
			// The blobs are separated by 2/0.5 = 4 standard deviations
			// per coordinate in 4 dimensions: the Bayes classifier errs
			// with probability Phi(-4) = 3e-5. 0.9 leaves room for the
			// privacy noise and the short run; both runs must reach it,
			// and the faulty one must stay within 0.05 of the undisturbed
			// one.
			if calm < 0.9 || faulty < 0.9 || math.Abs(calm-faulty) > 0.05 {
				t.Errorf("accuracy undisturbed %.3f, with faults %.3f: want both >= 0.9 and within 0.05", calm, faulty)
			}
		})
	}
}

// entry is one inclusion of a device: round t and S_i + Y_i after it
// (S_i: the sum of its included clean estimates).
type entry struct {
	t   int
	sum []float64
}

// realDevices builds sess.M devices running the product's device halves
// (shared/optim) on blobs, with faults of probability p (late updates
// arrive after late), recording each device's inclusions in hist.
func realDevices(t *testing.T, ctx context.Context, url string, sess wire.SessionParams, p float64, late time.Duration, f *faults) ([]*device.Runtime, [][]entry) {
	t.Helper()
	return realDevicesWith(t, ctx, url, sess, p, late, f, nil)
}

// realDevicesWith is realDevices with a last say on each device's
// configuration (the cluster test's dialer).
func realDevicesWith(t *testing.T, ctx context.Context, url string, sess wire.SessionParams, p float64, late time.Duration, f *faults,
	tweak func(i int, cfg *device.Config)) ([]*device.Runtime, [][]entry) {
	t.Helper()
	params := sess
	// hist[i] records, after each inclusion of device i, round t and
	// S_i + Y_i (S_i: the sum of its included clean estimates).
	hist := make([][]entry, sess.M)
	var rts []*device.Runtime
	for i := range sess.M {
		var seed mechanism.Seed
		seed[0], seed[1] = 2, byte(i)
		mdl, _ := model.New("logreg", 4, 2)
		dev, err := optim.NewDevice(params, mdl, mechanism.NewStream(seed, 0))
		if err != nil {
			t.Fatal(err)
		}
		in := dev.(optim.Introspector)
		S := make([]float64, sess.Dim)
		clean := make([]float64, sess.Dim)
		y := make([]float64, sess.Dim)
		cfg := device.Config{URL: url, JoinCode: "join-me", Storage: &device.MemStorage{},
			AllowTrusted: sess.Algorithm == "trusted",
			Unlimited:    true, // rho_p = 50: far above the default budget
			Data:         blobs(400, uint64(i)), MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
			NewDevice: func(optim.Params) (optim.Device, error) { return dev, nil },
			OnEvent: func(e device.Event) {
				// Runs inside the runtime, right after Commit: Clean is
				// still the included round's estimate.
				if e.Kind != device.EventIncluded {
					return
				}
				in.Clean(clean)
				in.Noise(y)
				sum := make([]float64, len(S))
				for k := range S {
					S[k] += clean[k]
					sum[k] = S[k] + y[k]
				}
				hist[i] = append(hist[i], entry{e.T, sum})
			}}
		if p > 0 {
			cfg.Hooks = faultHooks(rand.New(rand.NewPCG(77, uint64(i))), p, late, f)
		}
		if tweak != nil {
			tweak(i, &cfg)
		}
		rt, err := device.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		rts = append(rts, rt)
	}
	return rts, hist
}

// checkRealInvariant checks, for every committed round, that the server's
// qtilde equals (1/m) sum_i (S_i + Y_i) as of that round.
func checkRealInvariant(t *testing.T, qs map[int][]float64, hist [][]entry, m int) {
	t.Helper()
	if len(qs) == 0 {
		t.Fatal("no committed rounds recorded")
	}
	// qtilde_t = (1/m) sum_i (S_i + Y_i) as of round t, for every round.
	// The f64 compressor makes the messages exact; 1e-9 relative to the
	// largest |qtilde| is far above float64 rounding of a few hundred
	// O(1)-O(sigma) terms and far below one missed message.
	for round, q := range qs {
		worst, scale := 0.0, 1.0
		for k := range q {
			sum := 0.0
			for i := range hist {
				var last []float64
				for _, e := range hist[i] {
					if e.t <= round {
						last = e.sum
					}
				}
				if last != nil {
					sum += last[k]
				}
			}
			worst = math.Max(worst, math.Abs(q[k]-sum/float64(m)))
			scale = math.Max(scale, math.Abs(q[k]))
		}
		if worst > 1e-9*scale {
			t.Errorf("round %d: |qtilde - q - (1/m) sum Y_i| = %g (scale %g)", round, worst, scale)
		}
	}
}
