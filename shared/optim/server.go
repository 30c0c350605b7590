package optim

import (
	"fmt"
	"io"
	"math"

	"browserfl/shared/mechanism"
	"browserfl/shared/optim/algo"
)

const serverMagic = "BFLS"
const serverVersion = 1

// server is the server half of every registered algorithm.
//
// mu^2 family ("nc", "trusted", "mu2"), per round t (alpha_t = t):
//
//	qtilde_t = qtilde_{t-1} + (1/m) sum_{included} msg_i      (nc, mu2)
//	q_t = q_{t-1} + (1/m) sum msg_i; qtilde_t = q_t + Y_t      (trusted; Y_t fresh)
//	w_{t+1}  = Pi_K(w_t - eta qtilde_t)
//	x_{t+1}  = (1 - 2/(t+2)) x_t + 2/(t+2) w_{t+1}    (alpha_{t+1}/alpha_{1:t+1} = 2/(t+2))
//
// SGD family: x_{t+1} = Pi_K(x_t - eta v_t) with v_t = (1/m) sum msg_i, or
// for SoteriaFL v_t = h_t + (1/m) sum msg_i and h_{t+1} = h_t + gamma (1/M)
// sum msg_i (Algorithm 2 lines 8-10; with partial participation the server
// shift tracks (1/M) sum_i h_i exactly because a device's shift moves only
// when its message is included).
//
// The divisor is the cohort size m even when fewer updates arrive: the
// coordinator proceeds with what arrived and the missing devices count as
// zero messages. This keeps the noise-cancellation identity
// qtilde_t = q_t + (1/m) sum_i Y_i exact (Y_i moves only on inclusion).
type server struct {
	p       Params
	a       algo.Algorithm
	dim     int
	m       float64
	radius  float64 // D/2, 0 = none
	gamma   float64
	entropy io.Reader
	// The trusted server's noise: q_t rounded onto a grid of step gstep
	// plus an exact discrete Gaussian of sigmaZ grid units (the device's
	// mechanism, so the ledger's reading holds for it too).
	gstep  float64
	sigmaZ int64
	qnext  []float64
	qgrid  []int64
	zs     []int64

	t              int
	w, x, xprev, q []float64 // q: qtilde (nc, mu2) or the exact q (trusted)
	h              []float64 // SoteriaFL server shift

	sum, dec, noise []float64
	stream          *mechanism.Stream
}

func newServer(p Params, a algo.Algorithm, x0 []float64, entropy io.Reader) (*server, error) {
	if len(x0) == 0 || len(x0) > mechanism.MaxDim {
		return nil, fmt.Errorf("optim: initial point has dimension %d", len(x0))
	}
	if err := mechanism.CheckFinite(x0); err != nil {
		return nil, fmt.Errorf("optim: initial point: %w", err)
	}
	if a.Kind.Noise == algo.NoiseServer && entropy == nil {
		return nil, fmt.Errorf("optim: %s server needs an entropy source", a.Name)
	}
	spec, _ := mechanism.ParseSpec(p.Compressor)
	d := len(x0)
	s := &server{p: p, a: a, dim: d, m: float64(p.Cohort), radius: p.Diameter / 2, entropy: entropy, t: 1}
	s.gamma = shiftStep(p, spec, d)
	if a.Kind.Noise == algo.NoiseServer {
		sens := algo.TrustedSensitivity(p)
		var err error
		if s.gstep, err = mechanism.GridStep(sens, d); err != nil {
			return nil, fmt.Errorf("optim: trusted server noise: %w", err)
		}
		if s.sigmaZ, err = mechanism.DiscreteSigma(algo.TrustedSigma(p), sens, s.gstep, d); err != nil {
			return nil, fmt.Errorf("optim: trusted server noise: %w", err)
		}
	}
	s.x = append([]float64(nil), x0...)
	project(s.x, s.radius)
	if a.Kind.Mu2 {
		s.w = append([]float64(nil), s.x...)
		s.xprev = append([]float64(nil), s.x...)
		s.q = make([]float64, d)
	}
	if a.Kind.Shifted {
		s.h = make([]float64, d)
	}
	s.sum = make([]float64, d)
	s.dec = make([]float64, d)
	return s, nil
}

// shiftStep is gamma: Params.ShiftStep or SoteriaFL's
// sqrt((1+2 omega)/(2 (1+omega)^3)) (Theorem 3). For a biased compressor
// (omega = +Inf) the paper's formula does not apply; gamma = 1/2 then.
func shiftStep(p Params, spec mechanism.Spec, d int) float64 {
	if p.ShiftStep > 0 {
		return p.ShiftStep
	}
	if spec.C == nil {
		return 0
	}
	w := spec.C.Omega(d)
	if math.IsInf(w, 0) {
		return 0.5
	}
	return math.Sqrt((1 + 2*w) / (2 * (1 + w) * (1 + w) * (1 + w)))
}

// project maps v onto the ball of radius r centred at 0 (r = 0: no-op).
func project(v []float64, r float64) {
	if r > 0 {
		mechanism.Clip(v, r)
	}
}

func (s *server) Next() Round {
	r := Round{T: s.t, X: append([]float64(nil), s.x...)}
	if s.a.Kind.Mu2 {
		r.XPrev = append([]float64(nil), s.xprev...)
	}
	return r
}

func (s *server) Model() []float64 { return s.x }

// Round returns the index of the next round to apply.
func (s *server) Round() int { return s.t }

// Estimate returns a copy of the server's gradient estimate: qtilde for the
// mu^2 family (for "trusted", the exact q before the round's noise), the
// shift h for SoteriaFL, nil otherwise.
func (s *server) Estimate() []float64 {
	switch {
	case s.q != nil:
		return append([]float64(nil), s.q...)
	case s.h != nil:
		return append([]float64(nil), s.h...)
	}
	return nil
}

func (s *server) Apply(t int, updates []Update) error {
	if err := s.checkApply(t, len(updates)); err != nil {
		return err
	}
	for i := range s.sum {
		s.sum[i] = 0
	}
	for j, u := range updates {
		if u.T != t {
			return fmt.Errorf("optim: update %d is for round %d, want %d", j, u.T, t)
		}
		if err := mechanism.Decode(s.dec, u.Payload); err != nil {
			return fmt.Errorf("optim: update %d of round %d: %w", j, t, err)
		}
		for i, v := range s.dec {
			s.sum[i] += v
		}
	}
	return s.step(t)
}

// ApplySum implements SumApplier.
func (s *server) ApplySum(t int, sum []float64, n int) error {
	if err := s.checkApply(t, n); err != nil {
		return err
	}
	if len(sum) != s.dim {
		return fmt.Errorf("optim: sum of dimension %d, want %d", len(sum), s.dim)
	}
	if err := mechanism.CheckFinite(sum); err != nil {
		return fmt.Errorf("optim: sum of round %d: %w", t, err)
	}
	copy(s.sum, sum)
	return s.step(t)
}

func (s *server) checkApply(t, n int) error {
	if t != s.t {
		return fmt.Errorf("optim: apply round %d, server is at round %d", t, s.t)
	}
	if t > s.p.Rounds {
		return fmt.Errorf("optim: round %d beyond T = %d", t, s.p.Rounds)
	}
	if n < 0 || n > s.p.Cohort {
		return fmt.Errorf("optim: %d updates for a cohort of %d", n, s.p.Cohort)
	}
	return nil
}

// trustedNoise prepares the trusted server's release of round t without
// moving any state: q_t = q_{t-1} + inv sum into qnext, its grid
// integers into qgrid and a fresh discrete Gaussian vector into zs. It
// fails (and nothing changes) if the entropy source fails or q_t leaves
// the grid's exact range.
func (s *server) trustedNoise(inv float64) error {
	seed, err := mechanism.NewSeed(s.entropy)
	if err != nil {
		return fmt.Errorf("optim: server noise: %w", err)
	}
	if s.qnext == nil {
		s.qnext = make([]float64, s.dim)
		s.qgrid = make([]int64, s.dim)
		s.zs = make([]int64, s.dim)
		s.noise = make([]float64, s.dim)
	}
	for i, v := range s.sum {
		s.qnext[i] = s.q[i] + v*inv
	}
	if err := mechanism.ToGrid(s.qgrid, s.qnext, s.gstep); err != nil {
		return fmt.Errorf("optim: trusted server estimate: %w", err)
	}
	s.stream = streamFor(s.stream, seed, mechanism.PurposeNoise)
	s.stream.FillDiscreteGaussian(s.zs, s.sigmaZ)
	// |round(q/step)| < 2^52 (ToGrid) and |Z| is far below 2^52 (the
	// sampler's range), so their sums are exact in float64.
	return nil
}

// step takes round t's step from s.sum, the sum of its decoded updates.
func (s *server) step(t int) error {
	inv := 1 / s.m
	if s.a.Kind.Noise == algo.NoiseServer {
		if err := s.trustedNoise(inv); err != nil {
			return err
		}
	}
	// From here on nothing fails: the state moves as a whole.
	if s.a.Kind.Mu2 {
		step := s.q
		if s.a.Kind.Noise == algo.NoiseServer {
			// The release: step (round(q_t / step) + Z_t), exact integers
			// (trustedNoise checked they stay below 2^53).
			copy(s.q, s.qnext)
			for i, z := range s.zs {
				s.qgrid[i] += z
			}
			mechanism.FromGrid(s.noise, s.qgrid, s.gstep)
			step = s.noise
		} else {
			for i, v := range s.sum {
				s.q[i] += v * inv
			}
		}
		for i := range s.w {
			s.w[i] -= s.p.Eta * step[i]
		}
		project(s.w, s.radius)
		c := 2 / float64(t+2)
		copy(s.xprev, s.x)
		for i := range s.x {
			s.x[i] = (1-c)*s.x[i] + c*s.w[i]
		}
	} else {
		for i := range s.x {
			v := s.sum[i] * inv
			if s.h != nil {
				v += s.h[i]
			}
			s.x[i] -= s.p.Eta * v
		}
		if s.h != nil {
			g := s.gamma / float64(s.p.M)
			for i, v := range s.sum {
				s.h[i] += g * v
			}
		}
		project(s.x, s.radius)
	}
	s.t++
	return nil
}

func streamFor(s *mechanism.Stream, seed mechanism.Seed, purpose uint32) *mechanism.Stream {
	if s == nil {
		return mechanism.NewStream(seed, purpose)
	}
	s.Reset(seed, purpose)
	return s
}

func (s *server) MarshalBinary() ([]byte, error) {
	var w wbuf
	// The exact size: one allocation (the coordinator marshals the state
	// every round).
	w.b = make([]byte, 0, len(serverMagic)+1+8+len(s.a.Name)+2*8+8*(5+len(s.x)+len(s.w)+len(s.xprev)+len(s.q)+len(s.h)))
	w.b = append(w.b, serverMagic...)
	w.u8(serverVersion)
	w.str(s.a.Name)
	w.i64(s.dim)
	w.i64(s.t)
	w.vec(s.x)
	w.vec(s.w)
	w.vec(s.xprev)
	w.vec(s.q)
	w.vec(s.h)
	return w.b, nil
}

func (s *server) UnmarshalBinary(b []byte) error {
	r := rbuf{b: b}
	if string(r.take(len(serverMagic))) != serverMagic {
		return fmt.Errorf("optim: server state: bad magic")
	}
	if v := r.u8(); r.err == nil && v != serverVersion {
		return fmt.Errorf("optim: server state version %d, want %d", v, serverVersion)
	}
	name := string(r.bytes(64))
	dim := r.count("dimension", mechanism.MaxDim)
	t := r.count("round", s.p.Rounds+1)
	x := r.vec("x", s.dim)
	w := r.vec("w", s.dim)
	xprev := r.vec("xprev", s.dim)
	q := r.vec("q", s.dim)
	h := r.vec("h", s.dim)
	if err := r.done(); err != nil {
		return fmt.Errorf("optim: server state: %w", err)
	}
	switch {
	case name != s.a.Name:
		return fmt.Errorf("optim: server state is for %q, server runs %q", name, s.a.Name)
	case dim != s.dim:
		return fmt.Errorf("optim: server state has dimension %d, want %d", dim, s.dim)
	case t < 1:
		return fmt.Errorf("optim: server state round %d", t)
	case x == nil, s.a.Kind.Mu2 && (w == nil || xprev == nil || q == nil), s.a.Kind.Shifted && h == nil:
		return fmt.Errorf("optim: server state misses vectors for %q", s.a.Name)
	}
	s.t, s.x = t, x
	if s.a.Kind.Mu2 {
		s.w, s.xprev, s.q = w, xprev, q
	}
	if s.a.Kind.Shifted {
		s.h = h
	}
	return nil
}
