package coordinator

import (
	"strconv"
	"testing"
)

// TestEdgeHistoryCounts: an edge's history of a device follows the
// session's count of its inclusions. A device registered here starts from
// its start; an inclusion the edge added keeps the counts equal; an
// inclusion the edge did not see (elsewhere, or a decision it never got)
// starts the history again, no longer from the start; an exclusion adds
// nothing; an undecided update is given up when the device is asked again.
func TestEdgeHistoryCounts(t *testing.T) {
	e := &Edge{hists: map[string]*edgeHist{}, vecs: newVecList(0)}
	ec := &edgeConn{cn: &conn{id: "dev"}}
	vec := func(v float64) *[]float64 { x := []float64{v, 0}; return &x }

	e.newHistLocked("dev")
	h := e.askHistLocked(ec, 0)
	if !h.h.FromStart || h.h.Asks() != 1 || h.h.Len() != 0 {
		t.Fatalf("a device registered here: from start %v, asks %d, len %d", h.h.FromStart, h.h.Asks(), h.h.Len())
	}
	ec.hist, ec.pending, ec.pendingT = h, vec(1), 1
	e.decidedLocked(ec, 1, true)
	if h.h.Len() != 1 || h.incl != 1 || ec.pending != nil {
		t.Fatalf("after an inclusion: len %d, incl %d, pending %v", h.h.Len(), h.incl, ec.pending)
	}
	// Round 2: the counts agree, the history goes on from the start.
	if h2 := e.askHistLocked(ec, 1); h2 != h || !h.h.FromStart || h.h.Len() != 1 || h.h.Asks() != 2 {
		t.Fatalf("counts agree: from start %v, len %d, asks %d", h.h.FromStart, h.h.Len(), h.h.Asks())
	}
	// Excluded: nothing added.
	ec.pending, ec.pendingT = vec(2), 2
	e.decidedLocked(ec, 2, false)
	if h.h.Len() != 1 || h.incl != 1 {
		t.Fatalf("after an exclusion: len %d, incl %d", h.h.Len(), h.incl)
	}
	// Round 3 with an undecided update of round 2 left: given up.
	ec.pending, ec.pendingT = vec(2), 2
	e.askHistLocked(ec, 1)
	if ec.pending != nil {
		t.Fatal("an undecided update of an earlier round was kept")
	}
	// The session counts an inclusion the edge never saw: start again.
	if h4 := e.askHistLocked(ec, 3); h4 != h || h.h.FromStart || h.h.Len() != 0 || h.incl != 3 {
		t.Fatalf("an inclusion elsewhere: from start %v, len %d, incl %d", h.h.FromStart, h.h.Len(), h.incl)
	}
	// A device first asked here (registered elsewhere): not from the start.
	other := &edgeConn{cn: &conn{id: "moved"}}
	if ho := e.askHistLocked(other, 5); ho.h.FromStart || ho.incl != 5 {
		t.Fatalf("a device from elsewhere: from start %v, incl %d", ho.h.FromStart, ho.incl)
	}
}

// TestEdgeHistoriesBounded: beyond maxEdgeHistories the least recently
// asked history is dropped.
func TestEdgeHistoriesBounded(t *testing.T) {
	e := &Edge{hists: map[string]*edgeHist{}, vecs: newVecList(0)}
	for i := range maxEdgeHistories + 10 {
		e.askHistLocked(&edgeConn{cn: &conn{id: "d" + strconv.Itoa(i)}}, 0)
	}
	if len(e.hists) != maxEdgeHistories {
		t.Fatalf("%d histories, want %d", len(e.hists), maxEdgeHistories)
	}
	if _, ok := e.hists["d0"]; ok {
		t.Fatal("the least recently asked history was kept")
	}
}
