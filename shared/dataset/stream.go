package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// PageShardSize is the size of a demo shard for a device that joins a
// session of rounds rounds of batch samples after committed rounds, from a
// training set of n samples: min((rounds - committed) * batch, n), and at
// least one batch (or n if smaller).
//
// Why this size: a device uses each sample once (single pass) and may be
// asked in every remaining round (a class no larger than the cohort asks
// every device every round), so it needs at most (rounds - committed) *
// batch samples. A larger shard is a wasted download; a smaller one lets
// the device run out before the session ends. When the training set is
// smaller than that, the shard is the whole set (in a fresh order) and the
// device runs out after n / batch rounds.
func PageShardSize(rounds, batch, committed, n int) int {
	if rounds <= 0 || batch <= 0 || n <= 0 {
		return 0
	}
	left := max(rounds-committed, 1)
	if left > n/batch+1 {
		return n // (rounds-committed)*batch > n; also avoids overflow
	}
	return min(left*batch, n)
}

// ShardStream cuts a training set into label-skewed shards of any size,
// one after another, for demo devices that arrive one at a time.
//
// Each shard draws its label proportions from a symmetric Dirichlet(alpha)
// over the classes and takes its samples class by class from the samples
// no shard has used yet in the current epoch; a class that has run out is
// replaced by the others (so the proportions are a target, not a promise).
// An epoch is one pass over the training set in a fresh random order:
// shards overlap only once the set is used up, and then a new epoch starts
// with another shuffle. Hence, after H samples have been handed out, every
// sample has been handed out floor(H/n) or ceil(H/n) times, and the first
// shards that together hold at most n samples are disjoint. No shard holds
// a sample twice (a shard is at most n samples; when an epoch starts in
// the middle of a shard, the samples it already holds go to the back of
// the new epoch). Reuse across epochs is for demos only: real devices hold
// their own data.
//
// A ShardStream is deterministic in (labels, alpha, seed) and the sizes
// asked for; it is not safe for concurrent use.
type ShardStream struct {
	byClass [][]int // every sample's index, by class
	queue   [][]int // unused samples of the current epoch, by class
	left    int     // sum of len(queue[c])
	n       int
	alpha   float64
	rng     *rand.Rand
	epoch   int
	used    int64 // samples handed out so far
}

// NewShardStream returns a stream over the samples with these labels
// (non-negative; the classes are 0..max label). It needs at least one
// sample and a finite alpha > 0.
func NewShardStream(labels []int, alpha float64, seed uint64) (*ShardStream, error) {
	classes, err := checkLabels(labels)
	if err != nil {
		return nil, err
	}
	if len(labels) == 0 {
		return nil, fmt.Errorf("dataset: shard stream over no samples")
	}
	if !(alpha > 0) || math.IsInf(alpha, 1) {
		return nil, fmt.Errorf("dataset: shard stream: alpha = %v, want a finite alpha > 0", alpha)
	}
	s := &ShardStream{byClass: make([][]int, classes), n: len(labels), alpha: alpha, rng: newRand(seed, 0x5e7)}
	for i, l := range labels {
		s.byClass[l] = append(s.byClass[l], i)
	}
	s.queue = make([][]int, classes)
	return s, nil
}

// Epoch returns the current epoch: 0 before the first shard, 1 while the
// first pass over the set lasts, and so on.
func (s *ShardStream) Epoch() int { return s.epoch }

// Used returns how many samples the stream has handed out.
func (s *ShardStream) Used() int64 { return s.used }

// newEpoch refills every class with a fresh shuffle of its samples. The
// samples in held (the shard being built) go to the back of their class,
// counted in reserved, so that the shard does not take them again.
func (s *ShardStream) newEpoch(held []bool, reserved []int) {
	s.epoch++
	s.left = 0
	for c, idx := range s.byClass {
		q := make([]int, 0, len(idx))
		var back []int
		for _, k := range s.rng.Perm(len(idx)) {
			if i := idx[k]; held[i] {
				back = append(back, i)
			} else {
				q = append(q, i)
			}
		}
		reserved[c] = len(back)
		s.queue[c] = append(q, back...)
		s.left += len(s.queue[c])
	}
}

// Next returns the sample indices of the next shard of size samples, in
// random order. It needs 1 <= size <= n.
func (s *ShardStream) Next(size int) ([]int, error) {
	if size < 1 || size > s.n {
		return nil, fmt.Errorf("dataset: shard of %d samples from a set of %d", size, s.n)
	}
	classes := len(s.byClass)
	p := make([]float64, classes)
	dirichletTo(p, s.alpha, s.rng)
	out := make([]int, 0, size)
	held := make([]bool, s.n)
	reserved := make([]int, classes) // samples of this shard at the back of a class's queue
	avail := func(c int) int { return len(s.queue[c]) - reserved[c] }
	want := make([]int, classes)
	for len(out) < size {
		if s.left-sum(reserved) == 0 {
			s.newEpoch(held, reserved)
		}
		// Share what is missing among the classes that still have
		// samples, by the shard's proportions (largest remainder); if
		// none of them has any weight, by what they hold.
		need := size - len(out)
		w := make([]float64, classes)
		total := 0.0
		for c := range w {
			if avail(c) > 0 {
				w[c] = p[c]
				total += w[c]
			}
		}
		if total == 0 {
			for c := range w {
				w[c] = float64(avail(c))
				total += w[c]
			}
		}
		apportion(want, w, total, need)
		for c, k := range want {
			k = min(k, avail(c))
			for _, i := range s.queue[c][:k] {
				held[i] = true
				out = append(out, i)
			}
			s.queue[c] = s.queue[c][k:]
			s.left -= k
		}
		// Every pass either completes the shard or empties a class with
		// weight (its share exceeded what it held), so this terminates.
	}
	s.rng.Shuffle(len(out), func(a, b int) { out[a], out[b] = out[b], out[a] })
	s.used += int64(size)
	return out, nil
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}

// apportion splits need into dst in proportion to w (summing to total > 0):
// floor shares, then one more to the largest fractional parts.
func apportion(dst []int, w []float64, total float64, need int) {
	given := 0
	frac := make([]float64, len(w))
	for c := range w {
		x := float64(need) * w[c] / total
		dst[c] = int(math.Floor(x))
		frac[c] = x - float64(dst[c])
		given += dst[c]
	}
	for ; given < need; given++ {
		best := -1
		for c := range frac {
			if w[c] > 0 && (best < 0 || frac[c] > frac[best]) {
				best = c
			}
		}
		if best < 0 {
			return
		}
		dst[best]++
		frac[best] = -1
	}
}
