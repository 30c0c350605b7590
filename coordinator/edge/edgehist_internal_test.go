package edge

import (
	"browserfl/coordinator/bus"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/optim"
	"browserfl/shared/optim/plausible"
	"strconv"
	"testing"
)

// TestEdgeHistoryMarks: an edge's history of a device follows the
// session's marks. A device registered here starts from its start and
// takes the generation of its first mark; an inclusion the edge added
// keeps the marks equal; an inclusion it did not see, a new generation (a
// session restart, an evicted record), or an update given up before its
// decision starts the history again, no longer from the start; asks the
// edge did not see end "from the start"; an exclusion adds nothing.
func TestEdgeHistoryMarks(t *testing.T) {
	hs := newHistories(wsconn.NewVecList(0))
	ec := &edgeConn{cn: &wsconn.Conn{ID: "dev"}}
	vec := func(v float64) *[]float64 { x := []float64{v, 0}; return &x }
	const gen = 77

	hs.start("dev")
	h := hs.ask(ec, bus.Mark{Gen: gen, Incl: 0, Asks: 1})
	if !h.h.FromStart() || h.h.Asks() != 1 || h.h.Len() != 0 || h.gen != gen {
		t.Fatalf("a device registered here: from start %v, asks %d, len %d, gen %d", h.h.FromStart(), h.h.Asks(), h.h.Len(), h.gen)
	}
	ec.hist, ec.pending, ec.pendingT = h, vec(1), 1
	hs.decided(ec, 1, true)
	if h.h.Len() != 1 || h.incl != 1 || ec.pending != nil {
		t.Fatalf("after an inclusion: len %d, incl %d, pending %v", h.h.Len(), h.incl, ec.pending)
	}
	// Round 2: the marks agree, the history goes on from the start.
	if h2 := hs.ask(ec, bus.Mark{Gen: gen, Incl: 1, Asks: 2}); h2 != h || !h.h.FromStart() || h.h.Len() != 1 || h.h.Asks() != 2 {
		t.Fatalf("marks agree: from start %v, len %d, asks %d", h.h.FromStart(), h.h.Len(), h.h.Asks())
	}
	// Excluded: nothing added.
	ec.pending, ec.pendingT = vec(2), 2
	hs.decided(ec, 2, false)
	if h.h.Len() != 1 || h.incl != 1 || !h.h.FromStart() {
		t.Fatalf("after an exclusion: len %d, incl %d, from start %v", h.h.Len(), h.incl, h.h.FromStart())
	}
	// Asked once elsewhere meanwhile: the same sum, no longer from the start.
	hs.ask(ec, bus.Mark{Gen: gen, Incl: 1, Asks: 4})
	if h.h.FromStart() || h.h.Len() != 1 {
		t.Fatalf("asked elsewhere: from start %v, len %d", h.h.FromStart(), h.h.Len())
	}

	for _, tc := range []struct {
		name   string
		before func(*histories, *edgeConn)
		mark   bus.Mark
	}{
		{"an inclusion elsewhere", nil, bus.Mark{Gen: gen, Incl: 2, Asks: 5}},
		{"a new record (session restart)", nil, bus.Mark{Gen: gen + 2, Incl: 1, Asks: 5}},
		{"an update given up before its decision", func(hs *histories, ec *edgeConn) {
			ec.pending, ec.pendingT = vec(3), 5
			hs.lose(ec)
		}, bus.Mark{Gen: gen, Incl: 1, Asks: 5}},
		{"an undecided update when the next round comes", func(hs *histories, ec *edgeConn) {
			ec.pending, ec.pendingT = vec(3), 5
		}, bus.Mark{Gen: gen, Incl: 1, Asks: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHistories(wsconn.NewVecList(0))
			ec := &edgeConn{cn: &wsconn.Conn{ID: "dev"}}
			h := hs.ask(ec, bus.Mark{Gen: gen, Incl: 1, Asks: 4})
			ec.hist, ec.pending, ec.pendingT = h, vec(1), 4
			hs.decided(ec, 4, true) // the edge's count: 2
			h.incl = 1              // as if the session counted 1 before: the marks below agree but for the case
			if tc.before != nil {
				tc.before(&hs, ec)
			}
			got := hs.ask(ec, tc.mark)
			if got.h.Len() != 0 || got.h.FromStart() || got.incl != tc.mark.Incl || got.gen != tc.mark.Gen || ec.pending != nil {
				t.Fatalf("len %d, from start %v, incl %d, gen %d, pending %v: want a history started again", got.h.Len(), got.h.FromStart(), got.incl, got.gen, ec.pending)
			}
		})
	}

	// A device first asked here (registered elsewhere): not from the start.
	other := &edgeConn{cn: &wsconn.Conn{ID: "moved"}}
	if ho := hs.ask(other, bus.Mark{Gen: 9, Incl: 5, Asks: 8}); ho.h.FromStart() || ho.incl != 5 {
		t.Fatalf("a device from elsewhere: from start %v, incl %d", ho.h.FromStart(), ho.incl)
	}
	// Registered here but included elsewhere before its first round here.
	hs.start("early")
	if he := hs.ask(&edgeConn{cn: &wsconn.Conn{ID: "early"}}, bus.Mark{Gen: 5, Incl: 1, Asks: 2}); he.h.FromStart() {
		t.Fatal("a device included elsewhere before its first round here is from the start")
	}
}

// TestEdgeHistoriesBounded: beyond maxEdgeHistories the least recently
// asked history is dropped, and a decision for a dropped history adds
// nothing to it (it would hold a vector the bound does not count).
func TestEdgeHistoriesBounded(t *testing.T) {
	hs := newHistories(wsconn.NewVecList(0))
	first := &edgeConn{cn: &wsconn.Conn{ID: "d0"}}
	first.hist = hs.ask(first, bus.Mark{Gen: 1, Asks: 1})
	for i := 1; i < maxEdgeHistories+10; i++ {
		hs.ask(&edgeConn{cn: &wsconn.Conn{ID: "d" + strconv.Itoa(i)}}, bus.Mark{Gen: 1, Asks: 1})
	}
	if len(hs.byID) != maxEdgeHistories {
		t.Fatalf("%d histories, want %d", len(hs.byID), maxEdgeHistories)
	}
	if _, ok := hs.byID["d0"]; ok {
		t.Fatal("the least recently asked history was kept")
	}
	x := []float64{1, 2}
	first.pending, first.pendingT = &x, 1
	hs.decided(first, 1, true)
	if first.hist.h.Len() != 0 {
		t.Fatal("an evicted history still takes inclusions")
	}
}

// TestHistoryOnlyWhenChecked: an update joins (and is checked against) a
// device's history only in a round whose checker tests running sums; with
// no checker, or one that tests messages only, it does not, so no
// unchecked message ever reaches a history.
func TestHistoryOnlyWhenChecked(t *testing.T) {
	mk := func(compressor string) *plausible.Checker {
		p := optim.Params{Algorithm: "nc", M: 30, Cohort: 10, Rounds: 20, Batch: 16, Clip: 1, Eta: 0.5, Rho: 1.5, Compressor: compressor}
		c, err := plausible.NewChecker(p, 64)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tracking, messagesOnly := mk(""), mk("randk:0.5")
	if !tracking.Tracks() || messagesOnly.Tracks() {
		t.Fatalf("test setting: checkers track %v and %v", tracking.Tracks(), messagesOnly.Tracks())
	}
	withHist := &edgeConn{hist: &edgeHist{}}
	for _, tc := range []struct {
		name string
		chk  *plausible.Checker
		ec   *edgeConn
		want bool
	}{
		{"a checker of running sums", tracking, withHist, true},
		{"no checker", nil, withHist, false},
		{"a checker of messages only", messagesOnly, withHist, false},
		{"no history kept", tracking, &edgeConn{}, false},
		{"no connection", tracking, nil, false},
	} {
		got := (&edgeRound{chk: tc.chk}).historyOf(tc.ec)
		if (got != nil) != tc.want || (got != nil && got != &withHist.hist.h) {
			t.Errorf("%s: history %p, want one: %v", tc.name, got, tc.want)
		}
	}
}
