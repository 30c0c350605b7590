package optim

import (
	"fmt"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim/algo"
)

// SoteriaFL's variance-reduced local estimators (Algorithm 3, options II
// and III), with every per-sample gradient clipped to S so that the
// decomposition of Assumption 3 holds by construction: phi_j (difference of
// two clipped gradients) in the 2S-ball, psi_j in the S-ball (Lemma 1:
// G_A = 2G, G_B = G). The device samples its minibatch of b distinct local
// indices from its coin stream. The first snapshot (SVRG) and the first
// table (SAGA) are taken at the x of the device's first Prepare (the paper
// starts them at x^0; any start keeps the estimators unbiased).

// reducer is the state of a device's SVRG or SAGA estimator over its
// whole local dataset: the committed snapshot, table and mean the device
// saves, and the local data and caches it does not.
type reducer struct {
	name string    // the algorithm's, for errors
	est  estimator // clipped per-sample gradients (SGD estimator)
	dim  int
	S    float64 // clipping bound
	b    int     // minibatch size
	prob float64 // Params.SnapshotProb (0: b/n)

	// committed state
	snap  []float64 // SVRG snapshot w
	table []float64 // SAGA: clipped gradient of local sample j at w_j, row-major n x d
	avg   []float64 // SAGA: mean of the table rows

	// caches (not marshalled)
	snapG  []float64 // SVRG: clipped full gradient at snap when snapOK
	snapOK bool
	local  []dataset.Sample

	// scratch
	g, g2 []float64
	idx   []int
}

func newReducer(p Params, a algo.Algorithm, m model.Model, d int) reducer {
	g := make([]float64, d)
	return reducer{name: a.Name, est: estimator{m: m, g: g}, dim: d, S: p.S(), b: p.Batch, prob: p.SnapshotProb, g: g}
}

// setLocal keeps the device's local data (checked by the caller); the
// SVRG snapshot's full gradient is computed again from it.
func (vr *reducer) setLocal(samples []dataset.Sample) {
	vr.local = samples
	vr.snapOK = false
}

// sampleIdx draws b distinct indices of [0, n) into vr.idx (Floyd).
func (vr *reducer) sampleIdx(coins *mechanism.Stream, n, b int) []int {
	vr.idx = vr.idx[:0]
	mark := make(map[int]bool, b)
	for j := n - b; j < n; j++ {
		t := coins.Intn(j + 1)
		if mark[t] {
			t = j
		}
		mark[t] = true
		vr.idx = append(vr.idx, t)
	}
	return vr.idx
}

func (vr *reducer) needLocal() error {
	if vr.local == nil {
		return fmt.Errorf("optim: %s needs SetLocalData before Prepare", vr.name)
	}
	return nil
}

// fullClipped writes (1/n) sum_j clip(grad f_j(at)) into dst.
func (vr *reducer) fullClipped(dst, at []float64, r Round) error {
	clear(dst)
	inv := 1 / float64(len(vr.local))
	for j, s := range vr.local {
		if err := vr.est.grad(vr.g, r, s, at, vr.S); err != nil {
			return fmt.Errorf("local sample %d: %w", j, err)
		}
		for i, x := range vr.g {
			dst[i] += x * inv
		}
	}
	return nil
}

// svrg writes the SVRG estimate at r.X into v; a new snapshot, drawn
// with the coins, goes to p.
func (vr *reducer) svrg(v []float64, r Round, p *pending, coins *mechanism.Stream) error {
	if err := vr.needLocal(); err != nil {
		return err
	}
	if vr.snap == nil {
		vr.snap = append([]float64(nil), r.X...)
		vr.snapOK = false
	}
	if !vr.snapOK {
		if vr.snapG == nil {
			vr.snapG = make([]float64, vr.dim)
		}
		if err := vr.fullClipped(vr.snapG, vr.snap, r); err != nil {
			return err
		}
		vr.snapOK = true
	}
	if vr.g2 == nil {
		vr.g2 = make([]float64, vr.dim)
	}
	S, b := vr.S, vr.b
	copy(v, vr.snapG)
	for _, j := range vr.sampleIdx(coins, len(vr.local), b) {
		s := vr.local[j]
		if err := vr.est.grad(vr.g, r, s, r.X, S); err != nil {
			return err
		}
		if err := vr.est.grad(vr.g2, r, s, vr.snap, S); err != nil {
			return err
		}
		for i := range v {
			v[i] += (vr.g[i] - vr.g2[i]) / float64(b)
		}
	}
	prob := vr.prob
	if prob == 0 {
		prob = float64(b) / float64(len(vr.local))
	}
	if coins.Float64() < prob {
		p.snap = append([]float64(nil), r.X...)
	}
	return nil
}

// saga writes the SAGA estimate at r.X into v; the table rows it
// replaces go to p.
func (vr *reducer) saga(v []float64, r Round, p *pending, coins *mechanism.Stream) error {
	if err := vr.needLocal(); err != nil {
		return err
	}
	n, d, S, b := len(vr.local), vr.dim, vr.S, vr.b
	if vr.table == nil {
		vr.table = make([]float64, n*d)
		vr.avg = make([]float64, d)
		for j, s := range vr.local {
			row := vr.table[j*d : (j+1)*d]
			if err := vr.est.grad(row, r, s, r.X, S); err != nil {
				vr.table, vr.avg = nil, nil
				return fmt.Errorf("local sample %d: %w", j, err)
			}
			for i, x := range row {
				vr.avg[i] += x / float64(n)
			}
		}
	}
	copy(v, vr.avg)
	idx := vr.sampleIdx(coins, n, b)
	p.idx = append([]int(nil), idx...)
	p.rows = make([]float64, b*d)
	for k, j := range idx {
		row := p.rows[k*d : (k+1)*d]
		if err := vr.est.grad(row, r, vr.local[j], r.X, S); err != nil {
			return err
		}
		old := vr.table[j*d : (j+1)*d]
		for i := range v {
			v[i] += (row[i] - old[i]) / float64(b)
		}
	}
	return nil
}

// commit makes a committed round's new snapshot or table rows the state.
func (vr *reducer) commit(p *pending) {
	if p.snap != nil {
		vr.snap, p.snap = p.snap, nil
		vr.snapOK = false
	}
	if p.idx == nil {
		return
	}
	d, n := vr.dim, float64(len(vr.local))
	for k, j := range p.idx {
		row := p.rows[k*d : (k+1)*d]
		old := vr.table[j*d : (j+1)*d]
		for i := range row {
			vr.avg[i] += (row[i] - old[i]) / n
			old[i] = row[i]
		}
	}
}
