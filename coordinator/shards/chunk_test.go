package shards

import (
	"errors"
	"net/url"
	"slices"
	"testing"

	"browserfl/shared/dataset"
)

func TestParseRange(t *testing.T) {
	const n = 100
	for _, c := range []struct {
		q        string
		from, to int
		err      error
	}{
		{"", 0, n, nil},
		{"from=10", 10, n, nil},
		{"count=5", 0, 5, nil},
		{"from=98&count=5", 98, n, nil},
		{"from=99&count=1", 99, n, nil},
		{"from=007&count=3", 7, 10, nil},
		{"from=100", 0, 0, ErrRangeEnd},
		{"from=999999999", 0, 0, ErrRangeEnd},
		{"from=1000000000", 0, 0, ErrRange},
		{"count=0", 0, 0, ErrRange},
		{"from=-1", 0, 0, ErrRange},
		{"from=+1", 0, 0, ErrRange},
		{"from= 1", 0, 0, ErrRange},
		{"from=1e3", 0, 0, ErrRange},
		{"from=", 0, 0, ErrRange},
		{"count=", 0, 0, ErrRange},
		{"from=1&from=1", 0, 0, ErrRange},
		{"count=1&count=2", 0, 0, ErrRange},
	} {
		q, err := url.ParseQuery(c.q)
		if err != nil {
			t.Fatal(err)
		}
		from, to, err := ParseRange(q, n)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%q: err %v, want %v", c.q, err, c.err)
			}
			continue
		}
		if err != nil || from != c.from || to != c.to {
			t.Errorf("%q: [%d, %d) %v, want [%d, %d)", c.q, from, to, err, c.from, c.to)
		}
	}
	if Ranged(url.Values{"code": {"x"}}) || !Ranged(url.Values{"count": {"1"}}) || !Ranged(url.Values{"from": {""}}) {
		t.Error("Ranged: a chunk is asked by from or count, and only then")
	}
}

// FuzzParseRange: whatever the query, ParseRange either refuses it with
// ErrRange or ErrRangeEnd or returns a non-empty chunk inside the shard.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"from=0&count=1", "from=99", "count=999999999", "from=-1", "from=1&from=2", "from=%00"} {
		f.Add(s, 100)
	}
	f.Fuzz(func(t *testing.T, raw string, n int) {
		if n < 0 || n > 1<<20 {
			return
		}
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		from, to, err := ParseRange(q, n)
		if err != nil {
			if !errors.Is(err, ErrRange) && !errors.Is(err, ErrRangeEnd) {
				t.Fatalf("%q: error %v wraps neither ErrRange nor ErrRangeEnd", raw, err)
			}
			return
		}
		if from < 0 || from >= to || to > n {
			t.Fatalf("%q, n %d: chunk [%d, %d)", raw, n, from, to)
		}
	})
}

// TestReplay: a coordinator restarted with the sizes OnNew reported makes
// the same shards again, the same samples in the same order under the
// same indices, and the next shard continues the stream (no overlap with
// the replayed ones). Without Replay a restarted coordinator would hand
// a page's later chunks from another shard.
func TestReplay(t *testing.T) {
	set := func() (*Set, *[]int) {
		var sizes []int
		committed := 0
		return mustNew(t, Config{Classes: 10, Rounds: 10, Batch: 4, Alpha: 0.5, Seed: 3, Max: 8,
			Committed: func() int { c := committed; committed += 3; return c },
			OnNew:     func(n int) error { sizes = append(sizes, n); return nil }}), &sizes
	}
	a, sizes := set()
	for range 3 {
		if _, err := a.New(); err != nil {
			t.Fatal(err)
		}
	}
	if want := []int{40, 28, 16}; !slices.Equal(*sizes, want) {
		t.Fatalf("OnNew told %v, want %v", *sizes, want)
	}
	b := mustNew(t, Config{Classes: 10, Rounds: 10, Batch: 4, Alpha: 0.5, Seed: 3, Max: 8, Replay: *sizes})
	if b.Len() != 3 {
		t.Fatalf("replayed %d shards, want 3", b.Len())
	}
	for k := range 3 {
		if !slices.Equal(a.parts[k], b.parts[k]) {
			t.Errorf("shard %d differs after the replay", k)
		}
	}
	// 84 samples replayed and 40 more, of 200: one epoch, no overlap.
	nb, err := b.New()
	if err != nil || nb != 3 {
		t.Fatalf("the shard after the replay: index %d (%v), want 3", nb, err)
	}
	held := map[int]bool{}
	for _, p := range b.parts {
		for _, i := range p {
			if held[i] {
				t.Fatalf("sample %d in two shards: the stream did not continue after the replay", i)
			}
			held[i] = true
		}
	}
	refused := mustNew(t, Config{Classes: 10, Rounds: 10, Batch: 4, Alpha: 0.5, Seed: 3, Max: 8,
		OnNew: func(int) error { return errors.New("disk full") }})
	if _, err := refused.New(); err == nil || refused.Len() != 0 {
		t.Errorf("a shard that could not be recorded was handed out (%v, %d shards)", err, refused.Len())
	}
}

func mustNew(t *testing.T, cfg Config) *Set {
	t.Helper()
	labels := make([]int, 200)
	for i := range labels {
		labels[i] = i % 10
	}
	s, err := New(labelSet(labels), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// labelSet is a Source of one-feature samples with the given labels.
type labelSet []int

func (l labelSet) Len() int      { return len(l) }
func (l labelSet) Labels() []int { return l }
func (l labelSet) Subset(idx []int) (dataset.Set, error) {
	s := dataset.Set{Name: "labels", Features: 1, Classes: 10}
	for _, i := range idx {
		s.Samples = append(s.Samples, dataset.Sample{X: []float32{float32(i)}, Label: l[i]})
	}
	return s, nil
}
