package shards_test

import (
	"bytes"
	"encoding/binary"
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

// TestCompactFiles: the files made straight from a *dataset.Compact's
// bytes (one allocation per shard) are those its float32 samples encode
// to: the blob, the images and labels IDX files, and every chunk.
func TestCompactFiles(t *testing.T) {
	const n, f = 500, 12
	im := &dataset.IDX{Type: dataset.Uint8, Dims: []int{n, 3, 4}, Data: make([]byte, n*f)}
	lab := &dataset.IDX{Type: dataset.Uint8, Dims: []int{n}, Data: make([]byte, n)}
	for i := range im.Data {
		im.Data[i] = byte(31*i + i/7)
	}
	for i := range lab.Data {
		lab.Data[i] = byte(i * 7 / 3 % 10)
	}
	compact, err := dataset.NewCompact("c", im, lab, 10)
	if err != nil {
		t.Fatal(err)
	}
	cfg := shards.Config{Classes: 10, Rounds: 20, Batch: 4, Alpha: 0.5, Seed: 5, Max: 8}
	fast, err := shards.New(compact, cfg)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := shards.New(compact.Set(), cfg) // a dataset.Set: Subset, then EncodeShard
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		i, err := fast.New()
		if err != nil {
			t.Fatal(err)
		}
		if j, err := slow.New(); err != nil || j != i {
			t.Fatalf("shard %d, %d: %v", i, j, err)
		}
		sub, err := slow.Shard(i)
		if err != nil {
			t.Fatal(err)
		}
		want, err := dataset.EncodeShard(sub)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []*shards.Set{fast, slow} {
			for range 2 { // made, then from the cache
				blob, err := s.Blob(i)
				if err != nil || !bytes.Equal(blob, want) {
					t.Fatalf("shard %d: blob of %d bytes (%v), want %d", i, len(blob), err, len(want))
				}
				images, labels, err := s.IDX(i)
				if err != nil || !bytes.Equal(append(binary.LittleEndian.AppendUint32(nil, uint32(len(images))), append(images, labels...)...), want) {
					t.Fatalf("shard %d: IDX files of %d and %d bytes (%v) are not the blob's", i, len(images), len(labels), err)
				}
			}
		}
		for _, r := range [][2]int{{0, 1}, {3, 17}, {0, sub.Len()}} {
			chunk, err := sub.Subset(seq(r[0], r[1]))
			if err != nil {
				t.Fatal(err)
			}
			wi, wl, err := chunk.EncodeIDX()
			if err != nil {
				t.Fatal(err)
			}
			var a, b bytes.Buffer
			dataset.WriteIDX(&a, wi)
			dataset.WriteIDX(&b, wl)
			gi, gl, err := fast.IDXRange(i, r[0], r[1])
			if err != nil || !bytes.Equal(gi, a.Bytes()) || !bytes.Equal(gl, b.Bytes()) {
				t.Errorf("shard %d, chunk %v: %d and %d bytes (%v), want %d and %d", i, r, len(gi), len(gl), err, a.Len(), b.Len())
			}
		}
	}
	if _, err := fast.Blob(99); err == nil {
		t.Error("shard 99 of 3 served")
	}
}

func seq(from, to int) []int {
	s := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}
