package engine_test

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"

	"browserfl/engine"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
)

// TestMissed: every combination of the miss rule. Only a sure member that
// was still out when the round closed at its target is spared.
func TestMissed(t *testing.T) {
	for _, tc := range []struct {
		delivered, atTarget, unsure, want bool
	}{
		{delivered: true, atTarget: false, unsure: false, want: false},
		{delivered: true, atTarget: true, unsure: false, want: false},
		{delivered: true, atTarget: false, unsure: true, want: false},
		{delivered: true, atTarget: true, unsure: true, want: false},
		{delivered: false, atTarget: false, unsure: false, want: true}, // deadline, or every other member in
		{delivered: false, atTarget: true, unsure: false, want: false}, // only slower than the others
		{delivered: false, atTarget: false, unsure: true, want: true},
		{delivered: false, atTarget: true, unsure: true, want: true}, // an idle new id: demoted all the same
	} {
		if got := engine.Missed(tc.delivered, tc.atTarget, tc.unsure); got != tc.want {
			t.Errorf("Missed(delivered %v, at target %v, unsure %v) = %v, want %v", tc.delivered, tc.atTarget, tc.unsure, got, tc.want)
		}
	}
}

// TestIncluded: delivered updates of members still in the cohort, sorted;
// an update from a device dropped from the cohort meanwhile is not.
func TestIncluded(t *testing.T) {
	delivered := map[string]int{"d": 1, "a": 2, "c": 3, "x": 4}
	cohort := map[string]bool{"a": true, "b": true, "c": true, "d": true}
	if got, want := engine.Included(delivered, cohort), []string{"a", "c", "d"}; !slices.Equal(got, want) {
		t.Fatalf("Included = %v, want %v", got, want)
	}
	if got := engine.Included(map[int]bool{}, map[int]bool{1: true}); len(got) != 0 {
		t.Fatalf("Included of nothing = %v", got)
	}
}

// applyOnly hides a server half's ApplySum.
type applyOnly struct{ optim.Server }

// TestApplyBothPaths: for every algorithm, Apply through ApplySum (the
// vectors summed in the given order) and through a server half without it
// (the payloads) leave the same state, bit for bit, round after round; a
// member carried by another's vector counts in n; a contribution without
// its payload is refused on the payload path and leaves the state as it
// was.
func TestApplyBothPaths(t *testing.T) {
	for _, alg := range algo.Names() {
		t.Run(alg, func(t *testing.T) {
			p := optim.Params{Algorithm: alg, Model: "logreg", Features: 5, Classes: 3,
				M: 8, Cohort: 4, Rounds: 60, Batch: 2, Clip: 1, Eta: 0.05, Diameter: 20}
			switch alg {
			case "nc", "shared", "trusted", "noisysgd", "local":
				p.Rho = 8
			case "cdpsgd", "soteria-sgd", "soteria-svrg", "soteria-saga":
				p.Epsilon, p.Delta, p.LocalSize = 8, 1e-5, 20
			}
			m, err := model.New("logreg", p.Features, p.Classes)
			if err != nil {
				t.Fatal(err)
			}
			d := m.Dim()
			seed := mechanism.Seed{9}
			a, err := optim.NewServer(p, make([]float64, d), mechanism.NewStream(seed, 0))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := optim.NewServer(p, make([]float64, d), mechanism.NewStream(seed, 0))
			if _, ok := a.(optim.SumApplier); !ok {
				t.Fatalf("%s: the server half has no ApplySum; the test compares the two paths", alg)
			}
			noise := mechanism.NewStream(mechanism.Seed{4}, 0)
			sum := make([]float64, d)
			for r := 1; r <= 5; r++ {
				a.Next()
				b.Next()
				n := 1 + r%p.Cohort
				cs := make([]engine.Contribution, n)
				for j := range cs {
					v := make([]float64, d)
					noise.FillNormal(v, 0.3)
					payload, err := mechanism.Dense32{}.Compress(nil, make([]float64, d), v, nil)
					if err != nil {
						t.Fatal(err)
					}
					cs[j].Vec = make([]float64, d)
					if err := mechanism.Decode(cs[j].Vec, payload); err != nil {
						t.Fatal(err)
					}
					cs[j].Payload = payload
				}
				if err := engine.Apply(a, r, sum, cs); err != nil {
					t.Fatal(err)
				}
				if err := engine.Apply(applyOnly{b}, r, sum, cs); err != nil {
					t.Fatal(err)
				}
				ma, _ := a.MarshalBinary()
				mb, _ := b.MarshalBinary()
				if !bytes.Equal(ma, mb) {
					t.Fatalf("round %d: the sum path and the payload path differ", r)
				}
			}
			before, _ := b.MarshalBinary()
			b.Next()
			err = engine.Apply(applyOnly{b}, 6, sum, []engine.Contribution{{Vec: make([]float64, d)}})
			if !errors.Is(err, engine.ErrNoPayload) {
				t.Fatalf("a contribution without its payload: %v, want ErrNoPayload", err)
			}
			if after, _ := b.MarshalBinary(); !bytes.Equal(before, after) {
				t.Fatal("a refused apply changed the state")
			}
		})
	}
}

// TestApplyCarriedMembers: an edge's aggregate is one vector for several
// members; the others come with a nil vector and still count in the
// round's n, which the server half checks against the cohort m: four
// members carried by one vector pass with m = 4, five are refused (and
// the state is left as it was).
func TestApplyCarriedMembers(t *testing.T) {
	p := optim.Params{Algorithm: "nc", Model: "logreg", Features: 5, Classes: 3, M: 8, Cohort: 4,
		Rounds: 60, Batch: 2, Clip: 1, Eta: 0.05, Diameter: 20, Rho: 8}
	m, _ := model.New("logreg", p.Features, p.Classes)
	d := m.Dim()
	v := make([]float64, d)
	for i := range v {
		v[i] = float64(i%7) - 3
	}
	for _, tc := range []struct {
		members int
		ok      bool
	}{{1, true}, {4, true}, {5, false}} {
		s, err := optim.NewServer(p, make([]float64, d), mechanism.NewStream(mechanism.Seed{1}, 0))
		if err != nil {
			t.Fatal(err)
		}
		s.Next()
		cs := make([]engine.Contribution, tc.members)
		cs[0].Vec = v
		before, _ := s.MarshalBinary()
		err = engine.Apply(s, 1, make([]float64, d), cs)
		if (err == nil) != tc.ok {
			t.Fatalf("%d members carried by one vector, cohort %d: %v, want ok %v", tc.members, p.Cohort, err, tc.ok)
		}
		if after, _ := s.MarshalBinary(); !tc.ok && !bytes.Equal(before, after) {
			t.Fatal("a refused apply changed the state")
		}
	}
}

// fixedServer is a server half whose next round and model are x.
type fixedServer struct {
	optim.Server
	x []float64
}

func (f fixedServer) Next() optim.Round { return optim.Round{T: 1, X: f.x} }
func (f fixedServer) Model() []float64  { return f.x }

// TestServable: a finite model is servable; one with an infinite or NaN
// coordinate, or a coordinate beyond float32 (the round frame), is not.
func TestServable(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    float64
		ok   bool
	}{{"finite", 1.5, true}, {"+Inf", math.Inf(1), false}, {"NaN", math.NaN(), false}, {"beyond float32", 1e39, false}} {
		x := make([]float64, 6)
		x[3] = tc.v
		if err := engine.Servable(fixedServer{x: x}, 1000); (err == nil) != tc.ok {
			t.Errorf("%s: Servable = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
