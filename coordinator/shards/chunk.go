package shards

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
)

// A page fetches its demo shard in chunks: the samples from..from+count
// of its shard (?from=&count=, both decimal), so it can start on the
// first rounds' pictures and fetch the rest while it trains. Without
// either parameter the whole shard is served (the native device, older
// pages).

// ErrRange is wrapped when a chunk's parameters are malformed (400).
var ErrRange = errors.New("demo shards: bad range")

// ErrRangeEnd is wrapped when a chunk starts at or past the end of the
// shard (416): the page has all of it.
var ErrRangeEnd = errors.New("demo shards: nothing from there")

// maxRangeDigits bounds each parameter: a shard never holds a billion
// samples, and the value cannot overflow an int.
const maxRangeDigits = 9

// Ranged reports whether q asks for a chunk rather than the whole shard.
func Ranged(q url.Values) bool { return q.Has("from") || q.Has("count") }

// ParseRange reads ?from=&count= for a shard of n samples and returns the
// chunk [from, to): from defaults to 0, count to the rest of the shard,
// and a count past the end is cut there. Each parameter must appear at
// most once and be decimal digits only; count must be at least 1.
func ParseRange(q url.Values, n int) (from, to int, err error) {
	from, err = rangeParam(q, "from", 0)
	if err != nil {
		return 0, 0, err
	}
	count, err := rangeParam(q, "count", n)
	if err != nil {
		return 0, 0, err
	}
	if count < 1 {
		return 0, 0, fmt.Errorf("%w: count %d: want at least 1", ErrRange, count)
	}
	if from >= n {
		return 0, 0, fmt.Errorf("%w: from %d: the shard has %d samples", ErrRangeEnd, from, n)
	}
	return from, from + min(count, n-from), nil
}

func rangeParam(q url.Values, name string, def int) (int, error) {
	vs, ok := q[name]
	switch {
	case !ok:
		return def, nil
	case len(vs) != 1:
		return 0, fmt.Errorf("%w: %s given %d times", ErrRange, name, len(vs))
	}
	v := vs[0]
	if v == "" || len(v) > maxRangeDigits {
		return 0, fmt.Errorf("%w: %s %.12q: want 1 to %d decimal digits", ErrRange, name, v, maxRangeDigits)
	}
	for _, c := range []byte(v) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: %s %.12q: want decimal digits", ErrRange, name, v)
		}
	}
	x, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrRange, name, err)
	}
	return x, nil
}

// Size returns the number of samples in shard idx.
func (s *Set) Size(idx int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if idx < 0 || idx >= len(s.parts) {
		return 0, errors.New("no such shard")
	}
	return len(s.parts[idx]), nil
}

// IDXRange returns samples [from, to) of shard idx (in the shard's
// order, which is random: any chunk is a sample of the shard's labels)
// as raw IDX files. Chunks are not cached; the compressed bodies are
// (the handler's site.EncodedBodies).
func (s *Set) IDXRange(idx, from, to int) (images, labels []byte, err error) {
	s.mu.Lock()
	if idx < 0 || idx >= len(s.parts) || from < 0 || to > len(s.parts[idx]) || from >= to {
		s.mu.Unlock()
		return nil, nil, fmt.Errorf("demo shards: chunk [%d, %d) of shard %d", from, to, idx)
	}
	part := s.parts[idx][from:to]
	s.mu.Unlock()
	b, err := encodeBlob(s.set, part)
	if err != nil {
		return nil, nil, fmt.Errorf("demo shard %d, chunk [%d, %d): %w", idx, from, to, err)
	}
	return splitBlob(b)
}
