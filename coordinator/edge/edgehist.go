package edge

import (
	"browserfl/coordinator/bus"
	"browserfl/engine/check"
)

// An edge's histories of its devices (for the cluster
// shape). The running-sum and persistence tests of plausible.Checker need
// every included update of a device since its history began, and, for a
// history from the device's start, every round it was asked. An edge sees
// its devices' updates one by one, but not those a device sends through
// another edge or straight to the session, and it learns an inclusion
// only from the decision it forwards.
//
// So each round message from the session carries, per member, a mark
// (histMark): the generation of the session's record of the device (drawn
// at random when the record is created, so a session restart or an
// evicted record never matches an old mark), its number of included
// updates so far, and the rounds it was asked so far, this one included.
// The edge's history of the device is kept only while everything agrees:
//
//   - a different generation or inclusion count, or an update whose
//     decision the edge never learned (the connection went, a newer
//     round came first), starts the history again, not from the start;
//   - a history from the start (only for a device registered at this
//     edge, whose first mark shows no inclusion) stops being one when the
//     session counts more asks than the edge (the device was asked
//     elsewhere), since the noise allowed follows the rounds asked.
//
// Starting again, or leaving "from the start", only loosens the tests
// (the release cap's noise; no persistence test), so an honest device is
// never refused for a history the edge lost; a hostile one that moves
// between edges is tested per message and over its stay on each edge.

// maxEdgeHistories bounds the histories an edge keeps (each holds a
// vector of the model's dimension: 2,048 of 7,850 coordinates take
// 129 MB); beyond it the least recently asked is dropped.
const maxEdgeHistories = 2048

// edgeHist is one device's history on this edge.
type edgeHist struct {
	h    check.History
	gen  uint64 // the session record's generation it counts against (0: not seen yet)
	incl int    // inclusions of the device the history accounts for
	// fresh: the device was registered at this edge and not asked yet;
	// its first mark gives the generation.
	fresh bool
	// lost: an update of the device was given up before its decision
	// (the history may miss an inclusion).
	lost bool
	used uint64 // Edge.histTick when last asked
}

// newHistLocked starts the history of a device registered at this edge:
// from its start, with no inclusion yet.
func (e *Edge) newHistLocked(id string) {
	e.evictHistLocked()
	e.histTick++
	e.hists[id] = &edgeHist{h: check.NewHistory(true), fresh: true, used: e.histTick}
}

// askHistLocked returns the history of ec's device asked for a round with
// the session's mark m: the edge's own if it agrees with m, else one
// started again (not from the start). The round is recorded as asked.
func (e *Edge) askHistLocked(ec *edgeConn, m bus.Mark) *edgeHist {
	id := ec.cn.ID
	eh := e.hists[id]
	if ec.pending != nil {
		// An undecided update of an earlier round: its decision will
		// not come to a history that waits for it any more.
		e.losePendingLocked(ec)
	}
	switch {
	case eh == nil:
		e.evictHistLocked()
		eh = &edgeHist{gen: m.Gen, incl: m.Incl}
		e.hists[id] = eh
	case eh.fresh && m.Incl == 0:
		eh.gen, eh.fresh = m.Gen, false
	case eh.fresh || eh.lost || eh.gen != m.Gen || eh.incl != m.Incl:
		eh.h.Restart()
		eh.gen, eh.incl, eh.fresh, eh.lost = m.Gen, m.Incl, false, false
	}
	e.histTick++
	eh.used = e.histTick
	eh.h.Ask()
	if eh.h.FromStart() && eh.h.Asks() != m.Asks {
		// Asked elsewhere too: the noise allowed is no longer known.
		eh.h.AskedElsewhere()
	}
	return eh
}

// decidedLocked applies the session's decision of round t to ec's device:
// its update of that round, if the edge holds it, joins its history when
// included (if the history is still the one kept for the device); either
// way the vector is recycled.
func (e *Edge) decidedLocked(ec *edgeConn, t int, included bool) {
	if ec.pending == nil || ec.pendingT != t {
		return
	}
	if included && ec.hist != nil && e.hists[ec.cn.ID] == ec.hist {
		ec.hist.h.Include(*ec.pending)
		ec.hist.incl++
	}
	e.dropPendingLocked(ec)
}

// losePendingLocked gives up ec's undecided update, if any: its history
// may now miss an inclusion.
func (e *Edge) losePendingLocked(ec *edgeConn) {
	if ec.pending != nil {
		if eh := e.hists[ec.cn.ID]; eh != nil {
			eh.lost = true
		}
	}
	e.dropPendingLocked(ec)
}

// dropPendingLocked recycles ec's undecided update, if any.
func (e *Edge) dropPendingLocked(ec *edgeConn) {
	if ec.pending != nil {
		e.vecs.Put(ec.pending)
		ec.pending, ec.pendingT = nil, 0
	}
}

// evictHistLocked makes room for one more history.
func (e *Edge) evictHistLocked() {
	for len(e.hists) >= maxEdgeHistories {
		var oldest string
		var at uint64
		for id, eh := range e.hists {
			if oldest == "" || eh.used < at {
				oldest, at = id, eh.used
			}
		}
		delete(e.hists, oldest)
	}
}
