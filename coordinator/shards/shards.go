package shards

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"browserfl/shared/dataset"
)

// Set hands out non-IID demo shards of a training set (Dirichlet label
// skew), one per page, sized for the rounds the page can still be asked
// in: dataset.PageShardSize, min((T - t) b, n) for a page that arrives
// after t committed rounds. Shards come from a dataset.ShardStream: they
// do not overlap while the training set lasts; after that the set is
// reused in a fresh shuffle (demo only: a real deployment has the data on
// the device). A page that comes back with its cookie gets the same shard
// again. At most Config.Max distinct shards are made; later pages
// get the earlier ones again, round robin.
type Set struct {
	set       Source
	Classes   int
	cfg       Config
	stream    *dataset.ShardStream
	committed func() int

	mu       sync.Mutex
	parts    [][]int        // the shards made, in order
	next     int            // round robin position once Max shards exist
	handouts int            // shards handed out (not counting repeats by cookie)
	samples  int64          // samples in those shards
	cache    map[int][]byte // shard index -> its blob
	order    []int          // cached shard indices, oldest first
	cached   int            // bytes of the cached blobs
}

// Source is the training set the demo shards are drawn from: a
// *dataset.Compact (one byte per pixel; cmd/coordinator keeps its pixels
// on disk, and a shard's float32 features never exist), a *task.RowSet
// (a row task's rows, served as CSV) or a dataset.Set.
type Source interface {
	Len() int
	Labels() []int
	Subset(idx []int) (dataset.Set, error)
}

// Config sizes and draws the demo shards.
type Config struct {
	// Classes is the training set's number of classes.
	Classes int
	// Rounds and Batch are the session's T and b.
	Rounds, Batch int
	// Alpha is the Dirichlet label skew (small = more non-IID).
	Alpha float64
	Seed  uint64
	// Max bounds the distinct shards made (and the memory they hold);
	// pages beyond it get earlier shards again.
	Max int
	// Committed returns the rounds committed so far, so that a late
	// joiner's shard covers only the rounds left; nil means 0.
	Committed func() int
	// CSV, when set, makes these shards rows of a task (shared/task)
	// rather than pictures: it writes the rows at the training set's
	// indices part as the task's CSV, which CSV(idx) serves.
	CSV func(part []int) ([]byte, error)
	// Replay lists the sizes of the shards made before (by an earlier
	// run of this coordinator, in order, as OnNew reported them): New
	// makes them again, the same samples under the same indices, so a
	// page that fetches the rest of its shard after a restart gets the
	// rest of the same shard (the stream is deterministic given Seed).
	Replay []int
	// OnNew, when set, is told the size of each new shard before it is
	// handed out (to be kept for Replay); an error refuses the shard.
	OnNew func(size int) error
}

// cachedShardBytes bounds the encoded shards kept in memory (a page asks
// for images and labels one after the other, and a device whose download
// was cut asks again): the most recent blobs up to this many bytes, and
// always the last one (a demo session's shard is 5 MB).
const cachedShardBytes = 12 << 20

// New returns the demo shard source over train.
func New(train Source, cfg Config) (*Set, error) {
	if cfg.Rounds <= 0 || cfg.Batch <= 0 || cfg.Max <= 0 || cfg.Classes <= 0 {
		return nil, fmt.Errorf("demo shards: rounds %d, batch %d, max %d, classes %d: want all positive", cfg.Rounds, cfg.Batch, cfg.Max, cfg.Classes)
	}
	st, err := dataset.NewShardStream(train.Labels(), cfg.Alpha, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("demo shards: %w", err)
	}
	committed := cfg.Committed
	if committed == nil {
		committed = func() int { return 0 }
	}
	set := &Set{set: train, Classes: cfg.Classes, cfg: cfg, stream: st, committed: committed,
		cache: make(map[int][]byte)}
	for k, size := range cfg.Replay {
		if k >= cfg.Max {
			break
		}
		part, err := st.Next(size)
		if err != nil {
			return nil, fmt.Errorf("demo shards: replaying shard %d: %w", k, err)
		}
		set.parts = append(set.parts, part)
	}
	return set, nil
}

const Cookie = "bfl_demo_shard"

// Pick returns the shard index for a request: the one in its cookie if
// valid, else a new shard sized for the rounds left (or, once Max shards
// exist, an earlier one, round robin).
func (s *Set) Pick(r *http.Request) int {
	if i, ok := s.kept(r); ok {
		return i
	}
	t := s.committed()
	s.mu.Lock()
	defer s.mu.Unlock()
	i, err := s.newLocked(t)
	if err != nil {
		return -1 // files(-1) reports "no such shard"
	}
	return i
}

// Kept reports whether r carries the cookie of a shard already dealt (Pick
// then deals none).
func (s *Set) Kept(r *http.Request) bool {
	_, ok := s.kept(r)
	return ok
}

// kept returns the shard r's cookie names, if it names one dealt.
func (s *Set) kept(r *http.Request) (int, bool) {
	ck, err := r.Cookie(Cookie)
	if err != nil {
		return 0, false
	}
	i, err := strconv.Atoi(ck.Value)
	if err != nil {
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return i, i >= 0 && i < len(s.parts)
}

// newLocked hands out a shard to a new page after t committed rounds.
func (s *Set) newLocked(t int) (int, error) {
	var i int
	if len(s.parts) < s.cfg.Max {
		size := dataset.PageShardSize(s.cfg.Rounds, s.cfg.Batch, t, s.set.Len())
		if size < 1 || size > s.set.Len() {
			return 0, fmt.Errorf("demo shards: shard of %d samples from %d", size, s.set.Len())
		}
		if s.cfg.OnNew != nil {
			if err := s.cfg.OnNew(size); err != nil {
				return 0, fmt.Errorf("demo shards: %w", err)
			}
		}
		part, err := s.stream.Next(size)
		if err != nil {
			return 0, err
		}
		s.parts = append(s.parts, part)
		i = len(s.parts) - 1
	} else {
		i = s.next % len(s.parts)
		s.next++
	}
	s.handouts++
	s.samples += int64(len(s.parts[i]))
	return i, nil
}

// New hands out a shard as pick does for a request without a cookie and
// returns its index (native devices and tests).
func (s *Set) New() (int, error) {
	t := s.committed()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newLocked(t)
}

// blob returns shard idx as a demo shard blob (dataset.EncodeShard),
// from the cache or made now. Its images and labels IDX files are parts
// of it (splitBlob), so the three files of a shard cost one allocation of
// the blob's size.
func (s *Set) blob(idx int) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.cache[idx]; ok {
		return b, nil
	}
	if idx < 0 || idx >= len(s.parts) {
		return nil, errors.New("no such shard")
	}
	b, err := encodeBlob(s.set, s.parts[idx])
	if err != nil {
		return nil, fmt.Errorf("demo shard %d: %w", idx, err)
	}
	for len(s.order) > 0 && s.cached+len(b) > cachedShardBytes {
		s.cached -= len(s.cache[s.order[0]])
		delete(s.cache, s.order[0])
		s.order = s.order[1:]
	}
	s.cache[idx] = b
	s.order = append(s.order, idx)
	s.cached += len(b)
	return b, nil
}

// blobSource is a Source that encodes a shard blob from its own bytes
// (*dataset.Compact: no float32 features on the way).
type blobSource interface {
	ShardBlob(idx []int) ([]byte, error)
}

// encodeBlob returns the samples of set at part as a demo shard blob.
func encodeBlob(set Source, part []int) ([]byte, error) {
	if bs, ok := set.(blobSource); ok {
		return bs.ShardBlob(part)
	}
	sub, err := set.Subset(part)
	if err != nil {
		return nil, err
	}
	return dataset.EncodeShard(sub)
}

// splitBlob returns the images and labels IDX files of a demo shard blob
// (parts of it, not copies).
func splitBlob(blob []byte) (images, labels []byte, err error) {
	if len(blob) < 4 {
		return nil, nil, fmt.Errorf("demo shard blob of %d bytes", len(blob))
	}
	n := binary.LittleEndian.Uint32(blob)
	if uint64(n) > uint64(len(blob)-4) {
		return nil, nil, fmt.Errorf("demo shard blob: images of %d bytes in %d", n, len(blob))
	}
	return blob[4 : 4+n : 4+n], blob[4+n:], nil
}

func (s *Set) Blob(idx int) ([]byte, error) {
	return s.blob(idx)
}

func (s *Set) IDX(idx int) (images, labels []byte, err error) {
	b, err := s.blob(idx)
	if err != nil {
		return nil, nil, err
	}
	return splitBlob(b)
}

// Rows reports whether the shards are a task's rows (served by CSV)
// rather than pictures (Blob, IDX).
func (s *Set) Rows() bool { return s.cfg.CSV != nil }

// CSV returns shard idx as the task's CSV rows; an error for picture
// shards.
func (s *Set) CSV(idx int) ([]byte, error) {
	if s.cfg.CSV == nil {
		return nil, errors.New("demo shards: pictures, not rows")
	}
	s.mu.Lock()
	if idx < 0 || idx >= len(s.parts) {
		s.mu.Unlock()
		return nil, errors.New("no such shard")
	}
	part := s.parts[idx]
	s.mu.Unlock()
	return s.cfg.CSV(part)
}

// Len returns the number of distinct shards made so far.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.parts)
}

// Stats sums up the demo data handed out.
type Stats struct {
	// HandedOut counts shards given to pages (a page that comes back
	// with its cookie is not counted again); Samples is the samples in
	// them; Distinct the shards made; TrainSamples the training set.
	HandedOut    int   `json:"handed_out"`
	Samples      int64 `json:"samples"`
	Distinct     int   `json:"distinct"`
	TrainSamples int   `json:"train_samples"`
	// Epoch is the pass over the training set the shards are drawn
	// from: above 1, shards reuse samples of earlier ones.
	Epoch int `json:"epoch"`
}

// Stats returns what was handed out so far.
func (s *Set) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{HandedOut: s.handouts, Samples: s.samples, Distinct: len(s.parts),
		TrainSamples: s.set.Len(), Epoch: s.stream.Epoch()}
}

// Shard returns shard idx as a Set (native devices and tests).
func (s *Set) Shard(idx int) (dataset.Set, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if idx < 0 || idx >= len(s.parts) {
		return dataset.Set{}, fmt.Errorf("shard %d of %d", idx, len(s.parts))
	}
	return s.set.Subset(s.parts[idx])
}
