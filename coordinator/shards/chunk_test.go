package shards

import (
	"errors"
	"net/url"
	"testing"
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
