package coordinator

import (
	"bytes"
	"testing"
)

// TestFreeList: a free list hands back what was put (last in, first out),
// keeps at most max items, drops what keep refuses, and a nil list keeps
// nothing.
func TestFreeList(t *testing.T) {
	f := &freeList[int]{max: 2, keep: func(x int) bool { return x >= 0 }}
	if _, ok := f.get(); ok {
		t.Fatal("empty list returned an item")
	}
	f.put(1)
	f.put(-1) // refused
	f.put(2)
	f.put(3) // beyond max
	for _, want := range []int{2, 1} {
		if x, ok := f.get(); !ok || x != want {
			t.Fatalf("get = %d, %v; want %d", x, ok, want)
		}
	}
	if x, ok := f.get(); ok {
		t.Fatalf("get = %d after the kept items", x)
	}
	var nilList *freeList[int]
	nilList.put(1)
	if _, ok := nilList.get(); ok {
		t.Fatal("a nil list returned an item")
	}
}

func TestVecAndBufferLists(t *testing.T) {
	v := newVecList(10)
	if v.max != keptVectorBytes/80 {
		t.Errorf("max = %d, want %d", v.max, keptVectorBytes/80)
	}
	other := make([]float64, 11)
	v.put(&other)
	if _, ok := v.get(); ok {
		t.Error("a vector of another dimension was kept")
	}
	if big := newVecList(1 << 30); big.max != 16 {
		t.Errorf("max for a huge dimension = %d, want the floor 16", big.max)
	}
	e := newVecList(0)
	small, large := make([]float64, 7850), make([]float64, keptVectorBytes/256/8+1)
	e.put(&large)
	e.put(&small)
	if got, ok := e.get(); !ok || len(*got) != 7850 {
		t.Error("the edge's list did not keep an update-sized vector")
	}
	if _, ok := e.get(); ok {
		t.Error("the edge's list kept an oversized vector")
	}
	kept := make([]float64, 10)
	v.put(&kept)
	if got := takeVec(v, 10); got != &kept {
		t.Error("takeVec did not hand back the kept vector")
	}
	if got := takeVec(v, 10); got == &kept || len(*got) != 10 {
		t.Errorf("takeVec on an empty list: %p of length %d, want a new vector of 10", got, len(*got))
	}
	b := newReadBuffers()
	huge := bytes.NewBuffer(make([]byte, 0, maxKeptReadBuffer+1))
	b.put(huge)
	if _, ok := b.get(); ok {
		t.Error("an oversized read buffer was kept")
	}
}
