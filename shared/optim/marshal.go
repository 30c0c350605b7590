package optim

import (
	"fmt"

	"browserfl/shared/mechanism"
	"browserfl/shared/optim/algo"
)

// MarshalBinary encodes the device state (version 2; version 1 held a
// continuous sigma and is refused): committed state, the pending round (so
// a device that restarts between Prepare and the server's confirmation can
// still Commit or Abort), and the ledger. Y_i is stored as its seed and
// integer sigma (grid units), not as a vector. Caches and the local data
// are not stored (call SetLocalData again after UnmarshalBinary).
func (dv *device) MarshalBinary() ([]byte, error) {
	var w wbuf
	w.b = append(w.b, deviceMagic...)
	w.u8(deviceVersion)
	w.str(dv.a.Name)
	w.i64(dv.dim)
	lb, err := dv.ledger.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("optim: device ledger: %w", err)
	}
	w.bytes(lb)
	w.i64(dv.n)
	w.i64(dv.lastT)
	w.bool(dv.y.Has)
	w.b = append(w.b, dv.y.Seed[:]...)
	w.i64(int(dv.y.Sigma))
	w.vec(dv.e)
	w.vec(dv.h)
	w.vec(dv.vr.snap)
	w.vec(dv.vr.avg)
	w.i64(len(dv.vr.table))
	for _, x := range dv.vr.table {
		w.f64(x)
	}
	p := dv.pend
	w.bool(p.ok)
	if p.ok {
		w.i64(p.t)
		w.b = append(w.b, p.seed[:]...)
		w.i64(int(p.sigma))
		w.vec(p.e)
		w.vec(p.h)
		w.vec(p.snap)
		w.i64(len(p.idx))
		for _, j := range p.idx {
			w.i64(j)
		}
		for _, x := range p.rows {
			w.f64(x)
		}
	}
	return w.b, nil
}

// UnmarshalBinary restores a state written by MarshalBinary into a device
// built by NewDevice with the same Params and model. It validates
// everything and leaves the device unchanged on error.
func (dv *device) UnmarshalBinary(b []byte) error {
	dv.vzT = 0 // the released integers are not saved
	r := rbuf{b: b}
	if string(r.take(len(deviceMagic))) != deviceMagic {
		return fmt.Errorf("optim: device state: bad magic")
	}
	if v := r.u8(); r.err == nil && v != deviceVersion {
		return fmt.Errorf("optim: device state version %d, want %d", v, deviceVersion)
	}
	name := string(r.bytes(64))
	dim := r.count("dimension", mechanism.MaxDim)
	if r.err == nil && (name != dv.a.Name || dim != dv.dim) {
		return fmt.Errorf("optim: device state is for %q dimension %d, device runs %q dimension %d", name, dim, dv.a.Name, dv.dim)
	}
	lb := r.bytes(1 << 10)
	n := r.count("participations", 1<<40)
	lastT := r.count("last round", dv.p.Rounds)
	var y mechanism.NCState
	y.Has = r.bool()
	copy(y.Seed[:], r.take(mechanism.SeedSize))
	y.Sigma = int64(r.count("sigma", mechanism.MaxDiscreteSigma))
	y.N, y.Dim = n, dv.dim
	e := r.vec("residual", dv.dim)
	h := r.vec("shift", dv.dim)
	snap := r.vec("snapshot", dv.dim)
	avg := r.vec("saga mean", dv.dim)
	tl := r.count("saga table length", dv.p.LocalSize*dv.dim)
	var table []float64
	if r.err == nil && tl != 0 {
		if tl != dv.p.LocalSize*dv.dim {
			r.fail("saga table length %d, want %d", tl, dv.p.LocalSize*dv.dim)
		}
		table = make([]float64, tl)
		for i := range table {
			table[i] = r.f64("saga table")
		}
	}
	var p pending
	p.ok = r.bool()
	if p.ok {
		p.t = r.count("pending round", dv.p.Rounds)
		copy(p.seed[:], r.take(mechanism.SeedSize))
		p.sigma = int64(r.count("pending sigma", mechanism.MaxDiscreteSigma))
		p.e = r.vec("pending residual", dv.dim)
		p.h = r.vec("pending shift", dv.dim)
		p.snap = r.vec("pending snapshot", dv.dim)
		k := r.count("pending rows", dv.p.Batch)
		if k > 0 {
			p.idx = make([]int, k)
			for i := range p.idx {
				p.idx[i] = r.count("pending row index", dv.p.LocalSize-1)
			}
			p.rows = make([]float64, k*dv.dim)
			for i := range p.rows {
				p.rows[i] = r.f64("pending row")
			}
		}
	}
	if err := r.done(); err != nil {
		return fmt.Errorf("optim: device state: %w", err)
	}
	var ledger = dv.ledger
	if err := ledger.UnmarshalBinary(lb); err != nil {
		return fmt.Errorf("optim: device state: %w", err)
	}
	// Structural checks against the algorithm.
	switch {
	case (dv.spec.EF) != (e != nil):
		return fmt.Errorf("optim: device state residual does not match compressor %q", dv.spec)
	case dv.a.Kind.Shifted != (h != nil):
		return fmt.Errorf("optim: device state shift does not match %q", dv.a.Name)
	case y.Has && (dv.a.Kind.Noise != algo.NoiseNC || !(y.Sigma > 0)):
		return fmt.Errorf("optim: device state has a noise seed %q cannot use", dv.a.Name)
	case (table == nil) != (avg == nil):
		return fmt.Errorf("optim: device state SAGA table and mean disagree")
	case p.ok && (p.t < 1 || p.t != lastT):
		return fmt.Errorf("optim: device state pending round %d, last prepared %d", p.t, lastT)
	case p.ok && dv.spec.EF != (p.e != nil), p.ok && dv.a.Kind.Shifted != (p.h != nil):
		return fmt.Errorf("optim: device state pending vectors do not match the algorithm")
	case p.ok && dv.a.Kind.Noise == algo.NoiseNC && !(p.sigma > 0):
		return fmt.Errorf("optim: device state pending noise has sigma %v", p.sigma)
	case p.ok && p.idx != nil && table == nil:
		return fmt.Errorf("optim: device state has pending SAGA rows without a table")
	}
	if p.ok && dv.a.Kind.Noise == algo.NoiseNC {
		// Regenerate the pending noise vector from its seed.
		p.yvec = make([]int64, dv.dim)
		mechanism.DiscreteNoiseVector(p.yvec, p.seed, p.sigma, nil)
	}
	dv.ledger = ledger
	dv.n, dv.lastT, dv.y = n, lastT, y
	dv.yOK = false
	dv.e, dv.h, dv.vr.snap, dv.vr.avg, dv.vr.table = e, h, snap, avg, table
	dv.vr.snapOK = false
	dv.cleanOK = false
	dv.pend = p
	return nil
}
