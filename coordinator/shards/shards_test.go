package shards_test

import (
	"testing"

	"browserfl/coordinator/shards"
	"browserfl/shared/dataset"
)

// idSet is a training set of n one-feature samples whose feature names the
// sample (i/n), with unequal classes, so that shards can be checked for
// overlap by value.
func idSet(n int) dataset.Set {
	s := dataset.Set{Name: "ids", Features: 1, Classes: 10, Samples: make([]dataset.Sample, n)}
	for i := range s.Samples {
		s.Samples[i] = dataset.Sample{X: []float32{float32(i) / float32(n)}, Label: (i * 7 / 3) % 10}
	}
	return s
}

// TestShardsSizing: T, b, training-set size and the pages that ask (each
// after some committed rounds) -> the shard sizes handed out; shards do
// not overlap while the set lasts; beyond Max distinct shards, earlier
// ones are handed out again.
func TestShardsSizing(t *testing.T) {
	tests := []struct {
		name          string
		rounds, batch int
		n, max        int
		joinedAt      []int // committed rounds when each page asks
		wantSizes     []int
		wantDistinct  int
	}{
		{"demo session on Fashion-MNIST: 10 pages at the start", 200, 32, 60000, 120,
			[]int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []int{6400, 6400, 6400, 6400, 6400, 6400, 6400, 6400, 6400, 6400}, 10},
		{"late joiners get the rounds left", 200, 32, 60000, 120,
			[]int{0, 50, 150, 199, 200}, []int{6400, 4800, 1600, 32, 32}, 5},
		{"digits: the second page already reuses samples", 200, 32, 8000, 120,
			[]int{0, 0, 0}, []int{6400, 6400, 6400}, 3},
		{"T x b above the set: the whole set", 300, 32, 8000, 120,
			[]int{0, 0}, []int{8000, 8000}, 2},
		{"past Max, earlier shards again", 10, 4, 1000, 2,
			[]int{0, 5, 5, 5}, []int{40, 20, 40, 20}, 2},
	}
	for _, tc := range tests {
		committed := 0
		sh, err := shards.New(idSet(tc.n), shards.Config{Classes: 10, Rounds: tc.rounds, Batch: tc.batch,
			Alpha: 0.5, Seed: 3, Max: tc.max, Committed: func() int { return committed }})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[float32]bool{}
		handed := 0
		var samples int64
		for p, at := range tc.joinedAt {
			committed = at
			idx, err := sh.New()
			if err != nil {
				t.Fatalf("%s: page %d: %v", tc.name, p, err)
			}
			s, err := sh.Shard(idx)
			if err != nil {
				t.Fatal(err)
			}
			if s.Len() != tc.wantSizes[p] {
				t.Errorf("%s: page %d (after %d rounds): %d samples, want %d", tc.name, p, at, s.Len(), tc.wantSizes[p])
			}
			samples += int64(s.Len())
			if idx < p { // a repeat past Max
				continue
			}
			for _, x := range s.Samples {
				if handed+s.Len() <= tc.n && seen[x.X[0]] {
					t.Fatalf("%s: page %d: a sample of an earlier shard while the set lasts", tc.name, p)
				}
				seen[x.X[0]] = true
			}
			handed += s.Len()
		}
		st := sh.Stats()
		if st.Distinct != tc.wantDistinct || st.HandedOut != len(tc.joinedAt) || st.Samples != samples || st.TrainSamples != tc.n {
			t.Errorf("%s: stats %+v, want %d distinct, %d handed out, %d samples", tc.name, st, tc.wantDistinct, len(tc.joinedAt), samples)
		}
	}
	if _, err := shards.New(idSet(10), shards.Config{Classes: 10, Rounds: 1, Batch: 1, Alpha: 0.5}); err == nil {
		t.Error("Max 0 accepted")
	}
}
