package edge

import (
	"browserfl/coordinator/bus"
	"browserfl/coordinator/wsconn"
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
	used uint64 // histories.tick when last asked
}

// histories are the histories of the devices this edge has asked, by
// device id, at most maxEdgeHistories, and the undecided updates they
// wait for. They are guarded by the edge's mutex.
type histories struct {
	byID map[string]*edgeHist
	tick uint64
	vecs *wsconn.FreeList[*[]float64] // where decided or given-up updates go back
}

func newHistories(vecs *wsconn.FreeList[*[]float64]) histories {
	return histories{byID: map[string]*edgeHist{}, vecs: vecs}
}

// start starts the history of a device registered at this edge:
// from its start, with no inclusion yet.
func (hs *histories) start(id string) {
	hs.evict()
	hs.tick++
	hs.byID[id] = &edgeHist{h: check.NewHistory(true), fresh: true, used: hs.tick}
}

// ask returns the history of ec's device asked for a round with
// the session's mark m: the edge's own if it agrees with m, else one
// started again (not from the start). The round is recorded as asked.
func (hs *histories) ask(ec *edgeConn, m bus.Mark) *edgeHist {
	id := ec.cn.ID
	eh := hs.byID[id]
	if ec.pending != nil {
		// An undecided update of an earlier round: its decision will
		// not come to a history that waits for it any more.
		hs.lose(ec)
	}
	switch {
	case eh == nil:
		hs.evict()
		eh = &edgeHist{gen: m.Gen, incl: m.Incl}
		hs.byID[id] = eh
	case eh.fresh && m.Incl == 0:
		eh.gen, eh.fresh = m.Gen, false
	case eh.fresh || eh.lost || eh.gen != m.Gen || eh.incl != m.Incl:
		eh.h.Restart()
		eh.gen, eh.incl, eh.fresh, eh.lost = m.Gen, m.Incl, false, false
	}
	hs.tick++
	eh.used = hs.tick
	eh.h.Ask()
	if eh.h.FromStart() && eh.h.Asks() != m.Asks {
		// Asked elsewhere too: the noise allowed is no longer known.
		eh.h.AskedElsewhere()
	}
	return eh
}

// decided applies the session's decision of round t to ec's device:
// its update of that round, if the edge holds it, joins its history when
// included (if the history is still the one kept for the device); either
// way the vector is recycled.
func (hs *histories) decided(ec *edgeConn, t int, included bool) {
	if ec.pending == nil || ec.pendingT != t {
		return
	}
	if included && ec.hist != nil && hs.byID[ec.cn.ID] == ec.hist {
		ec.hist.h.Include(*ec.pending)
		ec.hist.incl++
	}
	hs.drop(ec)
}

// lose gives up ec's undecided update, if any: its history
// may now miss an inclusion.
func (hs *histories) lose(ec *edgeConn) {
	if ec.pending != nil {
		if eh := hs.byID[ec.cn.ID]; eh != nil {
			eh.lost = true
		}
	}
	hs.drop(ec)
}

// drop recycles ec's undecided update, if any.
func (hs *histories) drop(ec *edgeConn) {
	if ec.pending != nil {
		hs.vecs.Put(ec.pending)
		ec.pending, ec.pendingT = nil, 0
	}
}

// evict makes room for one more history.
func (hs *histories) evict() {
	for len(hs.byID) >= maxEdgeHistories {
		var oldest string
		var at uint64
		for id, eh := range hs.byID {
			if oldest == "" || eh.used < at {
				oldest, at = id, eh.used
			}
		}
		delete(hs.byID, oldest)
	}
}
