package wsconn

import (
	"bytes"
	"sync"
)

// FreeList keeps released buffers for reuse across garbage collections.
// A sync.Pool is emptied by every collection, and with 300 updates a
// round the coordinator then allocated a round's worth of update vectors
// and read buffers afresh after each one: those refills were most of what
// it allocated during rounds (about 4 MB a round at n = 3,000, m = 300,
// d = 7,850), so they also set the pace of the collections
// (docs/coordinator.md, "CPU against a plain websocket server").
//
// keep reports whether a released item is worth keeping (it is dropped
// otherwise); at most max items are kept.
type FreeList[T any] struct {
	mu    sync.Mutex
	items []T
	max   int
	keep  func(T) bool
}

// Get returns a kept item, if there is one (never on a nil list).
func (f *FreeList[T]) Get() (x T, ok bool) {
	if f == nil {
		return x, false
	}
	f.mu.Lock()
	if n := len(f.items); n > 0 {
		x, ok = f.items[n-1], true
		var zero T
		f.items[n-1] = zero
		f.items = f.items[:n-1]
	}
	f.mu.Unlock()
	return x, ok
}

// Put keeps x for a later get, unless max items are kept or keep refuses
// it (a nil list keeps nothing).
func (f *FreeList[T]) Put(x T) {
	if f == nil || f.keep != nil && !f.keep(x) {
		return
	}
	f.mu.Lock()
	if len(f.items) < f.max {
		f.items = append(f.items, x)
	}
	f.mu.Unlock()
}

// keptVectorBytes bounds the memory a free list of update vectors holds
// between rounds: 64 MiB, a thousand vectors at d = 7,850 (a round's
// worth at m = 1,000), 80 at d = 100,000.
const keptVectorBytes = 64 << 20

// NewVecList returns the free list of decoded update vectors for
// dimension dim; for dim <= 0 (an edge, which learns the dimension from
// the session's messages) it keeps vectors of any length up to
// keptVectorBytes/256 bytes, 256 of them.
func NewVecList(dim int) *FreeList[*[]float64] {
	if dim <= 0 {
		return &FreeList[*[]float64]{
			max:  256,
			keep: func(v *[]float64) bool { return 8*len(*v) <= keptVectorBytes/256 },
		}
	}
	return &FreeList[*[]float64]{
		max:  max(16, keptVectorBytes/(8*dim)),
		keep: func(v *[]float64) bool { return len(*v) == dim },
	}
}

// TakeVec returns a vector of length dim from f, or a new one.
func TakeVec(f *FreeList[*[]float64], dim int) *[]float64 {
	if v, ok := f.Get(); ok && len(*v) == dim {
		return v
	}
	v := make([]float64, dim)
	return &v
}

// Read buffers: frames are read one at a time per connection, so a few
// dozen cover the connections reading at once; a buffer grown past
// maxKeptReadBuffer (a frame far larger than an update) is dropped.
const (
	keptReadBuffers   = 64
	maxKeptReadBuffer = 256 << 10
)

func NewReadBuffers() *FreeList[*bytes.Buffer] {
	return &FreeList[*bytes.Buffer]{
		max:  keptReadBuffers,
		keep: func(b *bytes.Buffer) bool { return b.Cap() <= maxKeptReadBuffer },
	}
}
