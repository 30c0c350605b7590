package sim

import (
	"math"
	"slices"

	"browserfl/engine"
	"browserfl/shared/optim"
	"browserfl/shared/optim/plausible"
	"browserfl/shared/plan"
)

// sharedSum is the server's side of a shared-noise round in the
// simulator: what secure aggregation gives the coordinator (the sum of
// the included releases in the ring, engine.RingSum) and the one test it
// can run on it (engine.CheckSum), as coordinator/secround does.
type sharedSum struct {
	a    plan.SecAgg
	chk  *plausible.SumChecker
	ints [][]int64 // the included releases' grid integers
	sum  []float64
}

func newSharedSum(p optim.Params, d int) (*sharedSum, error) {
	p.Dim = d
	a, err := plan.SessionSecAgg(p)
	if err != nil {
		return nil, err
	}
	chk, err := plausible.NewSumChecker(p, d)
	if err != nil {
		return nil, err
	}
	return &sharedSum{a: a, chk: chk, sum: make([]float64, d)}, nil
}

// attack is what a hostile device of the session knows of the sum's test.
func (s *sharedSum) attack(d int) *sumAttack {
	return &sumAttack{chk: s.chk, step: s.a.Step, bits: s.a.Bits, hsum: make([]float64, d), try: make([]float64, d)}
}

// sumRound replaces the round's delivered messages by their sum as secure
// aggregation gives it, carried by the first included device (as the
// coordinator does), and returns the sum test's error: the round is then
// discarded (Discard) and every member that delivered aborts. Each
// release enters the ring as the grid integers its device's client would
// mask: an honest message is exactly on the grid; a hostile one is
// rounded onto it (its device sends integers).
func (r *run) sumRound(c engine.Collected[int]) error {
	ids := engine.Included(c.Delivered, c.Cohort)
	if len(ids) == 0 {
		return nil
	}
	s := r.shared
	hostile := false
	s.ints = s.ints[:min(len(ids), cap(s.ints))]
	for k, id := range ids {
		if k == len(s.ints) {
			s.ints = append(s.ints, nil)
		}
		if len(s.ints[k]) != r.d {
			s.ints[k] = make([]int64, r.d)
		}
		hostile = hostile || r.devs[id].hostile != nil
		for j, x := range r.vecs[slices.Index(r.cohort, id)] {
			s.ints[k][j] = int64(math.Round(x / s.a.Step))
		}
	}
	engine.RingSum(s.sum, s.ints, s.a.Bits, s.a.Step)
	if err := engine.CheckSum(s.chk, s.sum, len(ids)); err != nil {
		r.res.RejectedSums++
		if !hostile {
			r.res.RejectedSumsHonest++
		}
		return err
	}
	for k, id := range ids {
		var v engine.Contribution
		if k == 0 {
			v.Vec = s.sum
		}
		c.Delivered[id] = v
	}
	return nil
}
