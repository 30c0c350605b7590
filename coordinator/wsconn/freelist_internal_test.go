package wsconn

import (
	"bytes"
	"testing"
)

// TestFreeList: a free list hands back what was put (last in, first out),
// keeps at most max items, drops what keep refuses, and a nil list keeps
// nothing.
func TestFreeList(t *testing.T) {
	f := &FreeList[int]{max: 2, keep: func(x int) bool { return x >= 0 }}
	if _, ok := f.Get(); ok {
		t.Fatal("empty list returned an item")
	}
	f.Put(1)
	f.Put(-1) // refused
	f.Put(2)
	f.Put(3) // beyond max
	for _, want := range []int{2, 1} {
		if x, ok := f.Get(); !ok || x != want {
			t.Fatalf("get = %d, %v; want %d", x, ok, want)
		}
	}
	if x, ok := f.Get(); ok {
		t.Fatalf("get = %d after the kept items", x)
	}
	var nilList *FreeList[int]
	nilList.Put(1)
	if _, ok := nilList.Get(); ok {
		t.Fatal("a nil list returned an item")
	}
}

func TestVecAndBufferLists(t *testing.T) {
	v := NewVecList(10)
	if v.max != keptVectorBytes/80 {
		t.Errorf("max = %d, want %d", v.max, keptVectorBytes/80)
	}
	other := make([]float64, 11)
	v.Put(&other)
	if _, ok := v.Get(); ok {
		t.Error("a vector of another dimension was kept")
	}
	if big := NewVecList(1 << 30); big.max != 16 {
		t.Errorf("max for a huge dimension = %d, want the floor 16", big.max)
	}
	e := NewVecList(0)
	small, large := make([]float64, 7850), make([]float64, keptVectorBytes/256/8+1)
	e.Put(&large)
	e.Put(&small)
	if got, ok := e.Get(); !ok || len(*got) != 7850 {
		t.Error("the edge's list did not keep an update-sized vector")
	}
	if _, ok := e.Get(); ok {
		t.Error("the edge's list kept an oversized vector")
	}
	kept := make([]float64, 10)
	v.Put(&kept)
	if got := TakeVec(v, 10); got != &kept {
		t.Error("takeVec did not hand back the kept vector")
	}
	if got := TakeVec(v, 10); got == &kept || len(*got) != 10 {
		t.Errorf("takeVec on an empty list: %p of length %d, want a new vector of 10", got, len(*got))
	}
	b := NewReadBuffers()
	huge := bytes.NewBuffer(make([]byte, 0, maxKeptReadBuffer+1))
	b.Put(huge)
	if _, ok := b.Get(); ok {
		t.Error("an oversized read buffer was kept")
	}
}
