package coordinator

import "browserfl/shared/optim"

// An edge's histories of its devices (issue 23, point 2, for the cluster
// shape). The running-sum and persistence tests of optim.Checker need
// every included update of a device since its history began. An edge
// sees its devices' updates one by one, but not those a device sends
// through another edge or straight to the session, and it learns an
// inclusion only from the decision it forwards. So each round message
// from the session carries, per member, the device's number of included
// updates so far (busHeader.Incl); the edge counts the inclusions it has
// added to its history, and when the two differ (an inclusion elsewhere,
// a decision it never saw, an eviction) the history starts again, no
// longer from the start. A history is from the start only for a device
// registered at this edge (its first hello here) that has never been
// included elsewhere. Starting again only loosens the tests (the
// release cap's noise; no persistence test), so an honest device is
// never refused for a history the edge lost; a hostile one that moves
// between edges is tested per message and over its stay on each edge.

// maxEdgeHistories bounds the histories an edge keeps (each holds a
// vector of the model's dimension: 2,048 of 7,850 coordinates take
// 129 MB); beyond it the least recently asked is dropped.
const maxEdgeHistories = 2048

// edgeHist is one device's history on this edge.
type edgeHist struct {
	h    optim.History
	incl int    // inclusions of the device the history accounts for
	used uint64 // Edge.histTick when last asked
}

// newHistLocked starts the history of a device registered at this edge:
// from its start, with no inclusion yet.
func (e *Edge) newHistLocked(id string) {
	e.evictHistLocked()
	e.histTick++
	e.hists[id] = &edgeHist{h: optim.History{FromStart: true}, used: e.histTick}
}

// askHistLocked returns the history of ec's device asked for a round in
// which the session counts incl of its updates included so far: the
// edge's own if it accounts for exactly those, else one started again
// (not from the start). The round is recorded as asked.
func (e *Edge) askHistLocked(ec *edgeConn, incl int) *edgeHist {
	id := ec.cn.id
	eh := e.hists[id]
	switch {
	case eh == nil:
		e.evictHistLocked()
		eh = &edgeHist{incl: incl}
		e.hists[id] = eh
	case eh.incl != incl:
		eh.h.Reset()
		eh.h.FromStart = false
		eh.incl = incl
	}
	if ec.pending != nil {
		// An undecided update of an earlier round cannot join a history
		// that no longer waits for it.
		e.dropPendingLocked(ec)
	}
	e.histTick++
	eh.used = e.histTick
	eh.h.Ask()
	return eh
}

// decidedLocked applies the session's decision of round t to ec's device:
// its update of that round, if the edge holds it, joins its history when
// included; either way the vector is recycled.
func (e *Edge) decidedLocked(ec *edgeConn, t int, included bool) {
	if ec.pending == nil || ec.pendingT != t {
		return
	}
	if included && ec.hist != nil {
		ec.hist.h.Add(*ec.pending)
		ec.hist.incl++
	}
	e.dropPendingLocked(ec)
}

// dropPendingLocked recycles ec's undecided update, if any.
func (e *Edge) dropPendingLocked(ec *edgeConn) {
	if ec.pending != nil {
		e.vecs.put(ec.pending)
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
