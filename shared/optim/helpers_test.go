package optim

import (
	"errors"
	"io"
	"math"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim/algo"
)

func testSeed(b byte) mechanism.Seed {
	var s mechanism.Seed
	for i := range s {
		s[i] = b ^ byte(7*i)
	}
	return s
}

// synthData draws n samples of a 3-class problem in 5 features whose
// class means are well separated (so a linear model can reach high
// accuracy), from the fixed-seed stream rng.
func synthData(rng *mechanism.Stream, n int) []dataset.Sample {
	out := make([]dataset.Sample, n)
	for i := range out {
		c := rng.Intn(3)
		x := make([]float32, 5)
		for j := range x {
			x[j] = float32(0.3*rng.NormFloat64() + 0.1)
		}
		x[c] += 1
		out[i] = dataset.Sample{X: x, Label: c}
	}
	return out
}

// simulation drives one server and M devices in-process the way the
// coordinator does: uniform cohort of m, each chosen device prepares from
// the next b samples of its shard, a random fraction of updates is "lost"
// (aborted, not included), the server applies the included ones and the
// included devices commit.
type simulation struct {
	t      testing.TB
	p      Params
	srv    Server
	devs   []Device
	data   [][]dataset.Sample
	cursor []int
	rng    *mechanism.Stream
	lose   float64 // probability an update is not included
	// per-round record for invariant checks: sum over rounds of (1/m) sum of
	// clean estimates of included updates.
	q []float64
}

func newSimulation(t testing.TB, p Params, seed byte, perDevice int) *simulation {
	t.Helper()
	m, err := model.New("logreg", 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	dataRng := mechanism.NewStream(testSeed(seed), mechanism.PurposeCoins)
	seeds := mechanism.NewStream(testSeed(seed+1), mechanism.PurposeSeeds)
	s := &simulation{t: t, p: p, rng: mechanism.NewStream(testSeed(seed+2), mechanism.PurposeCoins)}
	x0 := make([]float64, m.Dim())
	s.srv, err = NewServer(p, x0, seeds)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := algo.Lookup(p.Algorithm)
	for i := 0; i < p.M; i++ {
		d, err := NewDevice(p, m.Clone(), seeds)
		if err != nil {
			t.Fatal(err)
		}
		data := synthData(dataRng, perDevice)
		if a.NeedsLocalData() {
			if err := d.(LocalDataSetter).SetLocalData(data[:p.LocalSize]); err != nil {
				t.Fatal(err)
			}
		}
		s.devs = append(s.devs, d)
		s.data = append(s.data, data)
	}
	s.cursor = make([]int, p.M)
	s.q = make([]float64, m.Dim())
	return s
}

func (s *simulation) batch(i int) []dataset.Sample {
	b := s.p.Batch
	data := s.data[i]
	if s.cursor[i]+b > len(data) {
		s.cursor[i] = 0 // test data wraps around; the product's single pass is the runtime's job
	}
	out := data[s.cursor[i] : s.cursor[i]+b]
	s.cursor[i] += b
	return out
}

// round runs one round and returns how many updates were included.
func (s *simulation) round() int {
	s.t.Helper()
	r := s.srv.Next()
	cohort := map[int]bool{}
	for j := s.p.M - s.p.Cohort; j < s.p.M; j++ {
		c := s.rng.Intn(j + 1)
		if cohort[c] {
			c = j
		}
		cohort[c] = true
	}
	var included []int
	var updates []Update
	clean := make([]float64, len(s.q))
	for i := 0; i < s.p.M; i++ {
		if !cohort[i] {
			continue
		}
		u, err := s.devs[i].Prepare(r, s.batch(i))
		if errors.Is(err, ErrBudget) {
			continue
		}
		if err != nil {
			s.t.Fatalf("round %d device %d: %v", r.T, i, err)
		}
		if s.rng.Float64() < s.lose {
			if err := s.devs[i].Abort(r.T); err != nil {
				s.t.Fatal(err)
			}
			continue
		}
		included = append(included, i)
		updates = append(updates, u)
		if err := s.devs[i].(Introspector).Clean(clean); err != nil {
			s.t.Fatal(err)
		}
		for k, v := range clean {
			s.q[k] += v / float64(s.p.Cohort)
		}
	}
	if err := s.srv.Apply(r.T, updates); err != nil {
		s.t.Fatalf("apply round %d: %v", r.T, err)
	}
	for _, i := range included {
		if err := s.devs[i].Commit(r.T); err != nil {
			s.t.Fatal(err)
		}
	}
	return len(included)
}

func baseParams(alg string) Params {
	p := Params{Algorithm: alg, Model: "logreg", Features: 5, Classes: 3,
		M: 8, Cohort: 4, Rounds: 60, Batch: 2, Clip: 1, Eta: 0.05, Diameter: 20}
	switch alg {
	case "nc", "shared", "trusted", "noisysgd", "local":
		p.Rho = 8
	case "cdpsgd", "soteria-sgd", "soteria-svrg", "soteria-saga":
		p.Epsilon, p.Delta = 8, 1e-5
		p.LocalSize = 20
	}
	return p
}

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

// entropyOf returns the entropy source a device was built with.
func entropyOf(d Device) io.Reader {
	switch dv := d.(type) {
	case *device:
		return dv.entropy
	case *localDevice:
		return dv.entropy
	}
	panic("unknown device type")
}
