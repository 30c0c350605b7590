// Package nctest is an instrumented stand-in algorithm for the
// coordinator's exactly-once tests: a noise-cancelling mean estimator
// whose server and device halves expose the quantities of the invariant
//
//	qtilde = q + (1/m) sum_i Y_i,  q = (1/m) sum_i Ssum_i
//
// (Ssum_i: the sum of device i's included clean messages, Y_i: its last
// committed noise). It follows the message rule of the noise-cancellation
// paper's Algorithm 1 (send s + y - Y_i, Y_i <- y only on inclusion) on a
// toy objective so that the test can see every term. Its noise comes from
// a seeded math/rand generator: this is test code, never product code.
package nctest

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
)

// Server is the server half: qtilde += (1/m) sum msg; x += eta (qtilde_t -
// qtilde_{t-1}), so x tracks the devices' mean target with the
// accumulated noise of the last messages only.
type Server struct {
	M   int       `json:"m"`
	Eta float64   `json:"eta"`
	T   int       `json:"t"` // next round
	X   []float64 `json:"x"`
	Q   []float64 `json:"q"` // qtilde
}

// NewServer returns a server at x = 0 in dimension d.
func NewServer(d, m int, eta float64) *Server {
	return &Server{M: m, Eta: eta, T: 1, X: make([]float64, d), Q: make([]float64, d)}
}

// Next implements optim.Server.
func (s *Server) Next() optim.Round {
	return optim.Round{T: s.T, X: append([]float64(nil), s.X...)}
}

// Apply implements optim.Server.
func (s *Server) Apply(t int, updates []optim.Update) error {
	sum := make([]float64, len(s.X))
	dec := make([]float64, len(s.X))
	for _, u := range updates {
		if u.T != t {
			return fmt.Errorf("nctest: update for round %d in round %d", u.T, t)
		}
		if err := mechanism.Decode(dec, u.Payload); err != nil {
			return err
		}
		for i := range sum {
			sum[i] += dec[i]
		}
	}
	return s.ApplySum(t, sum, len(updates))
}

// ApplySum implements optim.SumApplier.
func (s *Server) ApplySum(t int, sum []float64, n int) error {
	if t != s.T {
		return fmt.Errorf("nctest: apply round %d, server at %d", t, s.T)
	}
	if len(sum) != len(s.X) || n > s.M {
		return fmt.Errorf("nctest: sum of %d values from %d updates", len(sum), n)
	}
	if err := mechanism.CheckFinite(sum); err != nil {
		return err
	}
	for i := range s.Q {
		step := sum[i] / float64(s.M)
		s.Q[i] += step
		s.X[i] += s.Eta * step
	}
	s.T++
	return nil
}

// Model implements optim.Server.
func (s *Server) Model() []float64 { return s.X }

// MarshalBinary implements optim.Server.
func (s *Server) MarshalBinary() ([]byte, error) { return json.Marshal(s) }

// UnmarshalBinary implements optim.Server.
func (s *Server) UnmarshalBinary(b []byte) error { return json.Unmarshal(b, s) }

// Device is the device half with target C: its clean message at x is
// s = clip(C - x, Clip) (the negative gradient of ||x - C||^2 / 2).
type Device struct {
	C     []float64 `json:"c"`
	Clip  float64   `json:"clip"`
	Sigma float64   `json:"sigma"`
	Seed  uint64    `json:"seed"`
	N     int       `json:"n"` // releases (participations counted at send)
	Draws uint64    `json:"draws"`
	// Committed state.
	Y    []float64 `json:"y"`
	Ssum []float64 `json:"ssum"`
	// Pending state of round PT (0 = none).
	PT int       `json:"pt"`
	PY []float64 `json:"py"`
	PS []float64 `json:"ps"`
	// Commits and Aborts count applied decisions.
	Commits, Aborts int
	// Hist records Ssum + Y after each commit, so a test can rebuild the
	// device's committed state as of any round.
	Hist []HistEntry `json:"hist"`
}

// HistEntry is the device's Ssum + Y after committing round T.
type HistEntry struct {
	T   int       `json:"t"`
	Sum []float64 `json:"sum"`
}

// SumAsOf returns Ssum + Y as of the end of round t (zeros before the
// first commit).
func (d *Device) SumAsOf(t int) []float64 {
	out := make([]float64, len(d.C))
	for _, h := range d.Hist {
		if h.T <= t {
			copy(out, h.Sum)
		}
	}
	return out
}

// NewDevice returns a device with target c.
func NewDevice(c []float64, clip, sigma float64, seed uint64) *Device {
	d := len(c)
	return &Device{C: append([]float64(nil), c...), Clip: clip, Sigma: sigma, Seed: seed,
		Y: make([]float64, d), Ssum: make([]float64, d)}
}

// Prepare implements optim.Device.
func (d *Device) Prepare(r optim.Round, _ []dataset.Sample) (optim.Update, error) {
	if len(r.X) != len(d.C) {
		return optim.Update{}, fmt.Errorf("nctest: round dim %d, want %d", len(r.X), len(d.C))
	}
	s := make([]float64, len(d.C))
	for i := range s {
		s[i] = d.C[i] - r.X[i]
	}
	mechanism.Clip(s, d.Clip)
	rng := rand.New(rand.NewPCG(d.Seed, d.Draws))
	d.Draws++
	y := make([]float64, len(s))
	msg := make([]float64, len(s))
	for i := range y {
		y[i] = d.Sigma * rng.NormFloat64()
		msg[i] = s[i] + y[i] - d.Y[i]
	}
	d.N++
	d.PT, d.PY, d.PS = r.T, y, s
	payload, err := mechanism.Dense64{}.Compress(nil, make([]float64, len(msg)), msg, nil)
	if err != nil {
		return optim.Update{}, err
	}
	return optim.Update{T: r.T, Payload: payload}, nil
}

// Commit implements optim.Device.
func (d *Device) Commit(t int) error {
	if t != d.PT || t == 0 {
		return fmt.Errorf("nctest: commit %d, pending %d", t, d.PT)
	}
	d.Y = d.PY
	for i := range d.Ssum {
		d.Ssum[i] += d.PS[i]
	}
	d.PT, d.PY, d.PS = 0, nil, nil
	d.Commits++
	sum := make([]float64, len(d.Y))
	for i := range sum {
		sum[i] = d.Ssum[i] + d.Y[i]
	}
	d.Hist = append(d.Hist, HistEntry{T: t, Sum: sum})
	return nil
}

// Abort implements optim.Device.
func (d *Device) Abort(t int) error {
	if t != d.PT || t == 0 {
		return fmt.Errorf("nctest: abort %d, pending %d", t, d.PT)
	}
	d.PT, d.PY, d.PS = 0, nil, nil
	d.Aborts++
	return nil
}

// MarshalBinary implements optim.Device.
func (d *Device) MarshalBinary() ([]byte, error) { return json.Marshal(d) }

// UnmarshalBinary implements optim.Device.
func (d *Device) UnmarshalBinary(b []byte) error { return json.Unmarshal(b, d) }

// ResidualAsOf returns max_k |q_k - (1/m) sum_i SumAsOf_i(t)_k| for the
// server's qtilde q after round t.
func ResidualAsOf(q []float64, m int, t int, devs []*Device) float64 {
	worst := 0.0
	sums := make([][]float64, len(devs))
	for i, d := range devs {
		sums[i] = d.SumAsOf(t)
	}
	for k := range q {
		sum := 0.0
		for _, s := range sums {
			sum += s[k]
		}
		worst = math.Max(worst, math.Abs(q[k]-sum/float64(m)))
	}
	return worst
}

// Residual returns max_k |qtilde_k - (1/m) sum_i (Ssum_i + Y_i)_k|: zero
// up to float64 rounding when the invariant holds.
func Residual(s *Server, devs []*Device) float64 {
	worst := 0.0
	for k := range s.Q {
		sum := 0.0
		for _, d := range devs {
			sum += d.Ssum[k] + d.Y[k]
		}
		worst = math.Max(worst, math.Abs(s.Q[k]-sum/float64(s.M)))
	}
	return worst
}
