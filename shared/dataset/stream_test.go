package dataset

import (
	"testing"
)

func TestPageShardSize(t *testing.T) {
	tests := []struct {
		name                        string
		rounds, batch, committed, n int
		want                        int
	}{
		{"demo session, Fashion-MNIST, at the start", 200, 32, 0, 60000, 6400},
		{"late joiner after 150 of 200 rounds", 200, 32, 150, 60000, 1600},
		{"joiner after the last round still gets one batch", 200, 32, 200, 60000, 32},
		{"digits: 8,000 samples hold one full page", 200, 32, 0, 8000, 6400},
		{"a set smaller than T x b: the whole set", 300, 32, 0, 8000, 8000},
		{"a set smaller than one batch", 10, 32, 0, 20, 20},
		{"huge T does not overflow", 1 << 40, 1 << 30, 0, 1000, 1000},
		{"no rounds", 0, 32, 0, 100, 0},
		{"empty set", 200, 32, 0, 0, 0},
	}
	for _, tc := range tests {
		if got := PageShardSize(tc.rounds, tc.batch, tc.committed, tc.n); got != tc.want {
			t.Errorf("%s: PageShardSize(%d, %d, %d, %d) = %d, want %d", tc.name, tc.rounds, tc.batch, tc.committed, tc.n, got, tc.want)
		}
	}
}

// TestShardStreamSizing hands out shards to pages joining one after the
// other (T, b, training-set size, pages) and checks each shard's size, no
// duplicate inside a shard, no overlap between shards while the set
// lasts, and balanced reuse after it: after H samples every sample has
// been handed out floor(H/n) or ceil(H/n) times.
func TestShardStreamSizing(t *testing.T) {
	tests := []struct {
		name          string
		rounds, batch int
		n, pages      int
		joinEvery     int // rounds committed between two joiners
		alpha         float64
		wantSizes     []int // first sizes (then repeat the last)
	}{
		{"Fashion-MNIST demo, 30 pages at the start", 200, 32, 60000, 30, 0, 0.5, []int{6400}},
		{"digits demo, 10 pages: reuse from the second page", 200, 32, 8000, 10, 0, 0.5, []int{6400}},
		{"late joiners get less", 10, 4, 1000, 4, 3, 0.5, []int{40, 28, 16, 4}},
		{"set smaller than T x b", 300, 32, 8000, 3, 0, 0.5, []int{8000}},
		{"very skewed labels (alpha 0.01)", 50, 10, 997, 7, 0, 0.01, []int{500}},
		{"near IID (alpha 100)", 50, 10, 997, 7, 0, 100, []int{500}},
	}
	for _, tc := range tests {
		labels := make([]int, tc.n)
		for i := range labels {
			labels[i] = (i * 7 / 3) % 10 // unequal classes
		}
		st, err := NewShardStream(labels, tc.alpha, 42)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		count := make([]int, tc.n)
		handed := 0
		for p := range tc.pages {
			size := PageShardSize(tc.rounds, tc.batch, p*tc.joinEvery, tc.n)
			want := tc.wantSizes[min(p, len(tc.wantSizes)-1)]
			if size != want {
				t.Errorf("%s: page %d: size %d, want %d", tc.name, p, size, want)
			}
			sh, err := st.Next(size)
			if err != nil {
				t.Fatalf("%s: page %d: %v", tc.name, p, err)
			}
			if len(sh) != size {
				t.Fatalf("%s: page %d: %d samples, want %d", tc.name, p, len(sh), size)
			}
			seen := map[int]bool{}
			for _, i := range sh {
				if i < 0 || i >= tc.n || seen[i] {
					t.Fatalf("%s: page %d: index %d out of range or twice in the shard", tc.name, p, i)
				}
				seen[i] = true
				if handed+size <= tc.n && count[i] > 0 {
					t.Fatalf("%s: page %d: sample %d overlaps an earlier shard while the set lasts (%d of %d handed out)", tc.name, p, i, handed, tc.n)
				}
				count[i]++
			}
			handed += size
			lo, hi := handed/tc.n, (handed+tc.n-1)/tc.n
			for i, k := range count {
				if k < lo || k > hi {
					t.Fatalf("%s: after page %d (%d handed out): sample %d handed out %d times, want %d..%d", tc.name, p, handed, i, k, lo, hi)
				}
			}
		}
		if st.Used() != int64(handed) {
			t.Errorf("%s: Used = %d, want %d", tc.name, st.Used(), handed)
		}
	}
}

// TestShardStreamSkew: with a small alpha the shards are label-skewed
// (non-IID), with a large one close to the set's mix.
func TestShardStreamSkew(t *testing.T) {
	labels := make([]int, 10000)
	for i := range labels {
		labels[i] = i % 10
	}
	entropy := func(alpha float64) float64 {
		st, err := NewShardStream(labels, alpha, 7)
		if err != nil {
			t.Fatal(err)
		}
		var parts [][]int
		for range 10 {
			sh, err := st.Next(500)
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, sh)
		}
		h, err := MeanLabelEntropy(labels, parts)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	skewed, iid := entropy(0.1), entropy(1000)
	if !(skewed < 0.6*iid) {
		t.Errorf("mean label entropy: alpha 0.1 gives %.3f, alpha 1000 gives %.3f; want the first well below", skewed, iid)
	}
}

func TestShardStreamRejects(t *testing.T) {
	if _, err := NewShardStream(nil, 0.5, 1); err == nil {
		t.Error("empty labels accepted")
	}
	if _, err := NewShardStream([]int{0, 1}, 0, 1); err == nil {
		t.Error("alpha 0 accepted")
	}
	if _, err := NewShardStream([]int{0, -1}, 1, 1); err == nil {
		t.Error("a negative label accepted")
	}
	st, err := NewShardStream([]int{0, 1, 2}, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{0, 4} {
		if _, err := st.Next(size); err == nil {
			t.Errorf("Next(%d) of 3 samples accepted", size)
		}
	}
}
