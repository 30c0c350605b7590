package coordinator

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	devrt "browserfl/device"
	"browserfl/shared/dataset"
)

// Shards hands out non-IID demo shards of a training set (Dirichlet label
// skew): demo only, a real deployment has the data on the device. A
// device that names itself gets the same shard again.
type Shards struct {
	set     dataset.Set
	parts   [][]int
	classes int

	mu    sync.Mutex
	next  int
	cache map[int]shardFiles
}

// NewShards partitions train into k shards with Dirichlet(alpha) label
// proportions (seeded).
func NewShards(train dataset.Set, k int, alpha float64, seed uint64) (*Shards, error) {
	parts, err := dataset.Dirichlet(train.Labels(), k, alpha, seed)
	if err != nil {
		return nil, fmt.Errorf("demo shards: %w", err)
	}
	return &Shards{set: train, parts: parts, classes: train.Classes, cache: make(map[int]shardFiles)}, nil
}

const shardCookie = "bfl_demo_shard"

// pick returns the shard index for a request: the one in its cookie if
// valid, else the next one round robin.
func (s *Shards) pick(r *http.Request) int {
	if ck, err := r.Cookie(shardCookie); err == nil {
		if i, err := strconv.Atoi(ck.Value); err == nil && i >= 0 && i < len(s.parts) {
			return i
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.next % len(s.parts)
	s.next++
	return i
}

type shardFiles struct{ blob, images, labels []byte }

func (s *Shards) files(idx int) (shardFiles, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.cache[idx]; ok {
		return f, nil
	}
	if idx < 0 || idx >= len(s.parts) {
		return shardFiles{}, errors.New("no such shard")
	}
	sub, err := s.set.Subset(s.parts[idx])
	if err != nil {
		return shardFiles{}, err
	}
	im, lab, err := sub.EncodeIDX()
	if err != nil {
		return shardFiles{}, err
	}
	var a, b bytes.Buffer
	if err := dataset.WriteIDX(&a, im); err != nil {
		return shardFiles{}, err
	}
	if err := dataset.WriteIDX(&b, lab); err != nil {
		return shardFiles{}, err
	}
	blob, err := devrt.EncodeShard(sub)
	if err != nil {
		return shardFiles{}, err
	}
	f := shardFiles{blob: blob, images: a.Bytes(), labels: b.Bytes()}
	s.cache[idx] = f
	return f, nil
}

func (s *Shards) blob(idx int) ([]byte, error) {
	f, err := s.files(idx)
	return f.blob, err
}

func (s *Shards) idx(idx int) (images, labels []byte, err error) {
	f, err := s.files(idx)
	return f.images, f.labels, err
}

// Len returns the number of shards.
func (s *Shards) Len() int { return len(s.parts) }

// Shard returns shard idx as a Set (native devices and tests).
func (s *Shards) Shard(idx int) (dataset.Set, error) {
	if idx < 0 || idx >= len(s.parts) {
		return dataset.Set{}, fmt.Errorf("shard %d of %d", idx, len(s.parts))
	}
	return s.set.Subset(s.parts[idx])
}
