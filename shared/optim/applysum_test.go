package optim

import (
	"bytes"
	"math"
	"testing"

	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim/algo"
)

// ApplySum with the sum of the decoded updates takes exactly Apply's step
// (same bits of the marshalled state) for every algorithm, over several
// rounds, and refuses what Apply would refuse.
func TestApplySumMatchesApply(t *testing.T) {
	for _, alg := range algo.Names() {
		t.Run(alg, func(t *testing.T) {
			p := baseParams(alg)
			m, _ := model.New("logreg", p.Features, p.Classes)
			d := m.Dim()
			a, err := NewServer(p, make([]float64, d), mechanism.NewStream(testSeed(9), 0))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := NewServer(p, make([]float64, d), mechanism.NewStream(testSeed(9), 0))
			sa, ok := b.(SumApplier)
			if !ok {
				t.Fatalf("%s server does not implement SumApplier", alg)
			}
			noise := mechanism.NewStream(testSeed(4), 0)
			for r := 1; r <= 5; r++ {
				n := 1 + r%p.Cohort
				ups := make([]Update, n)
				sum := make([]float64, d)
				dec := make([]float64, d)
				for j := range ups {
					v := make([]float64, d)
					noise.FillNormal(v, 0.3)
					payload, err := mechanism.Dense32{}.Compress(nil, make([]float64, d), v, nil)
					if err != nil {
						t.Fatal(err)
					}
					ups[j] = Update{T: r, Payload: payload}
					if err := mechanism.Decode(dec, payload); err != nil {
						t.Fatal(err)
					}
					for i := range sum {
						sum[i] += dec[i]
					}
				}
				if err := a.Apply(r, ups); err != nil {
					t.Fatal(err)
				}
				if err := sa.ApplySum(r, sum, n); err != nil {
					t.Fatal(err)
				}
				ma, _ := a.MarshalBinary()
				mb, _ := b.MarshalBinary()
				if !bytes.Equal(ma, mb) {
					t.Fatalf("round %d: ApplySum's state differs from Apply's", r)
				}
				// MarshalBinary sizes its buffer exactly (one allocation
				// a round in the coordinator).
				if len(ma) != cap(ma) {
					t.Errorf("round %d: state of %d bytes in a buffer of %d", r, len(ma), cap(ma))
				}
			}
			before, _ := b.MarshalBinary()
			next := 6
			inf := make([]float64, d)
			inf[d-1] = math.Inf(1)
			for _, tc := range []struct {
				name string
				t, n int
				sum  []float64
			}{
				{"wrong round", next + 1, 1, make([]float64, d)},
				{"past round", next - 1, 1, make([]float64, d)},
				{"more than the cohort", next, p.Cohort + 1, make([]float64, d)},
				{"negative count", next, -1, make([]float64, d)},
				{"short sum", next, 1, make([]float64, d-1)},
				{"long sum", next, 1, make([]float64, d+1)},
				{"infinite sum", next, 1, inf},
				{"NaN sum", next, 1, append(make([]float64, d-1), math.NaN())},
			} {
				if err := sa.ApplySum(tc.t, tc.sum, tc.n); err == nil {
					t.Errorf("%s: accepted", tc.name)
				}
				after, _ := b.MarshalBinary()
				if !bytes.Equal(before, after) {
					t.Fatalf("%s: the state changed", tc.name)
				}
			}
			if err := sa.ApplySum(next, make([]float64, d), p.Cohort); err != nil {
				t.Errorf("a whole cohort refused: %v", err)
			}
		})
	}
}
