package optim

import "fmt"

// SoteriaFL's variance-reduced local estimators (Algorithm 3, options II
// and III), with every per-sample gradient clipped to S so that the
// decomposition of Assumption 3 holds by construction: phi_j (difference of
// two clipped gradients) in the 2S-ball, psi_j in the S-ball (Lemma 1:
// G_A = 2G, G_B = G). The device samples its minibatch of b distinct local
// indices from its coin stream. The first snapshot (SVRG) and the first
// table (SAGA) are taken at the x of the device's first Prepare (the paper
// starts them at x^0; any start keeps the estimators unbiased).

// sampleIdx draws b distinct indices of [0, n) into dv.idx (Floyd).
func (dv *device) sampleIdx(n, b int) []int {
	dv.idx = dv.idx[:0]
	mark := make(map[int]bool, b)
	for j := n - b; j < n; j++ {
		t := dv.coins.Intn(j + 1)
		if mark[t] {
			t = j
		}
		mark[t] = true
		dv.idx = append(dv.idx, t)
	}
	return dv.idx
}

func (dv *device) needLocal() error {
	if dv.local == nil {
		return fmt.Errorf("optim: %s needs SetLocalData before Prepare", dv.a.Name)
	}
	return nil
}

// fullClipped writes (1/n) sum_j clip(grad f_j(at)) into dst.
func (dv *device) fullClipped(dst, at []float64, r Round) error {
	clear(dst)
	inv := 1 / float64(len(dv.local))
	for j, s := range dv.local {
		if err := dv.clippedGrad(dv.g, r, s, at, dv.p.S()); err != nil {
			return fmt.Errorf("local sample %d: %w", j, err)
		}
		for i, x := range dv.g {
			dst[i] += x * inv
		}
	}
	return nil
}

func (dv *device) svrg(r Round, p *pending) error {
	if err := dv.needLocal(); err != nil {
		return err
	}
	if dv.snap == nil {
		dv.snap = append([]float64(nil), r.X...)
		dv.snapOK = false
	}
	if !dv.snapOK {
		if dv.snapG == nil {
			dv.snapG = make([]float64, dv.dim)
		}
		if err := dv.fullClipped(dv.snapG, dv.snap, r); err != nil {
			return err
		}
		dv.snapOK = true
	}
	if dv.g2 == nil {
		dv.g2 = make([]float64, dv.dim)
	}
	S, b := dv.p.S(), dv.p.Batch
	v := dv.v
	copy(v, dv.snapG)
	for _, j := range dv.sampleIdx(len(dv.local), b) {
		s := dv.local[j]
		if err := dv.clippedGrad(dv.g, r, s, r.X, S); err != nil {
			return err
		}
		if err := dv.clippedGrad(dv.g2, r, s, dv.snap, S); err != nil {
			return err
		}
		for i := range v {
			v[i] += (dv.g[i] - dv.g2[i]) / float64(b)
		}
	}
	prob := dv.p.SnapshotProb
	if prob == 0 {
		prob = float64(b) / float64(len(dv.local))
	}
	if dv.coins.Float64() < prob {
		p.snap = append([]float64(nil), r.X...)
	}
	return nil
}

func (dv *device) saga(r Round, p *pending) error {
	if err := dv.needLocal(); err != nil {
		return err
	}
	n, d, S, b := len(dv.local), dv.dim, dv.p.S(), dv.p.Batch
	if dv.table == nil {
		dv.table = make([]float64, n*d)
		dv.avg = make([]float64, d)
		for j, s := range dv.local {
			row := dv.table[j*d : (j+1)*d]
			if err := dv.clippedGrad(row, r, s, r.X, S); err != nil {
				dv.table, dv.avg = nil, nil
				return fmt.Errorf("local sample %d: %w", j, err)
			}
			for i, x := range row {
				dv.avg[i] += x / float64(n)
			}
		}
	}
	v := dv.v
	copy(v, dv.avg)
	idx := dv.sampleIdx(n, b)
	p.idx = append([]int(nil), idx...)
	p.rows = make([]float64, b*d)
	for k, j := range idx {
		row := p.rows[k*d : (k+1)*d]
		if err := dv.clippedGrad(row, r, dv.local[j], r.X, S); err != nil {
			return err
		}
		old := dv.table[j*d : (j+1)*d]
		for i := range v {
			v[i] += (row[i] - old[i]) / float64(b)
		}
	}
	return nil
}

func (dv *device) commitSAGA(idx []int, rows []float64) {
	d, n := dv.dim, float64(len(dv.local))
	for k, j := range idx {
		row := rows[k*d : (k+1)*d]
		old := dv.table[j*d : (j+1)*d]
		for i := range row {
			dv.avg[i] += (row[i] - old[i]) / n
			old[i] = row[i]
		}
	}
}
