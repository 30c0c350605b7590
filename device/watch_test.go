package device

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/model"
	"browserfl/shared/optim"
)

// seeded is a deterministic entropy source: two devices built on equal
// seeds draw the same noise.
type seeded struct{ r *rand.ChaCha8 }

func (s seeded) Read(p []byte) (int, error) { return s.r.Read(p) }

// Watching a device half changes nothing it sends or stores: a watched
// and an unwatched device on the same noise seeds make the same payloads
// and the same saved state, bit for bit, over rounds with inclusions and
// an exclusion; what the watcher gets is the clean estimate (the device's
// own, optim.Introspector.Clean) and the payload decoded, and the two
// differ (the noise). Algorithms: nc (noise cancellation), noisy SGD
// (fresh noise), and nc with error-feedback compression.
func TestWatchPreparedChangesNothing(t *testing.T) {
	for _, tc := range []struct{ alg, comp string }{{"nc", ""}, {"noisysgd", ""}, {"nc", "ef+randk:0.5"}} {
		t.Run(tc.alg+tc.comp, func(t *testing.T) {
			s := demoSession()
			s.Algorithm, s.Compressor, s.Rounds = tc.alg, tc.comp, 6
			p := s
			build := func(seed byte) func(optim.Params) (optim.Device, error) {
				return func(p optim.Params) (optim.Device, error) {
					m, err := model.New(p.Model, p.Features, p.Classes)
					if err != nil {
						return nil, err
					}
					return optim.NewDevice(p, m, seeded{rand.NewChaCha8([32]byte{seed})})
				}
			}
			var got []Prepared
			watchedDev, err := WatchPrepared(build(1), func(pr Prepared) { got = append(got, pr) })(p)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := build(1)(p)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := watchedDev.(optim.Accountant); !ok {
				t.Fatal("the watched device is no optim.Accountant")
			}
			data := images(6 * s.Batch)
			x := make([]float64, s.Dim)
			for r := 1; r <= 5; r++ {
				for i := range x {
					x[i] = 0.001 * float64((i*r)%17-8)
				}
				batch := data[(r-1)*s.Batch : r*s.Batch]
				round := optim.Round{T: r, X: x, XPrev: x}
				uw, err := watchedDev.Prepare(round, batch)
				if err != nil {
					t.Fatal(err)
				}
				up, err := plain.Prepare(round, batch)
				if err != nil {
					t.Fatal(err)
				}
				if uw.T != up.T || !bytes.Equal(uw.Payload, up.Payload) {
					t.Fatalf("round %d: the watched device sent another payload", r)
				}
				if len(got) != r || got[r-1].T != r {
					t.Fatalf("round %d: watcher saw %d releases", r, len(got))
				}
				pr := got[r-1]
				clean := make([]float64, s.Dim)
				if err := plain.(optim.Introspector).Clean(clean); err != nil {
					t.Fatal(err)
				}
				if !equal(pr.Clean, clean) {
					t.Fatalf("round %d: the watcher's clean estimate is not the device's", r)
				}
				if d := dist(pr.Clean, pr.Sent); !(d > 0) {
					t.Fatalf("round %d: clean and sent are the same vector", r)
				}
				commit := func(d optim.Device) error { return d.Commit(r) }
				if r == 3 {
					commit = func(d optim.Device) error { return d.Abort(r) }
				}
				if err := commit(watchedDev); err != nil {
					t.Fatal(err)
				}
				if err := commit(plain); err != nil {
					t.Fatal(err)
				}
				bw, _ := watchedDev.MarshalBinary()
				bp, _ := plain.MarshalBinary()
				if !bytes.Equal(bw, bp) {
					t.Fatalf("round %d: the watched device saves another state", r)
				}
			}
			// Sent is the payload as the coordinator decodes it: the
			// last release decoded by the same codec.
			last := got[len(got)-1]
			if n := norm(last.Sent); !(n > 0) || math.IsInf(n, 0) {
				t.Fatalf("sent norm %v", n)
			}
		})
	}
}

// images are n synthetic 28x28 samples of 10 classes.
func images(n int) []dataset.Sample {
	out := make([]dataset.Sample, n)
	for i := range out {
		x := make([]float32, 784)
		for j := range x {
			x[j] = float32((i*7+j*13)%29) / 29
		}
		out[i] = dataset.Sample{X: x, Label: i % 10}
	}
	return out
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

func dist(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(s)
}

func norm(a []float64) float64 { return dist(a, make([]float64, len(a))) }
