package edge

import (
	"time"

	"browserfl/coordinator/bus"
	"browserfl/engine/check"
	"browserfl/shared/optim/plausible"
)

// edgeRound is a round's collection on this edge.
type edgeRound struct {
	epoch   uint64
	t       int
	members map[uint64]bool // connection -> answered (or dropped)
	waiting int
	sum     []float64
	ids     []string
	seqs    []uint64
	bytes   int64
	flushed bool
	timer   *time.Timer
	dim     int
	bound   float64
	chk     *plausible.Checker // the session's tests of each update; nil: the norm bound only
	// shared: a shared-noise round, which the session collects by secure
	// aggregation (secagg.go): the edge relays its frames and sums nothing.
	shared bool
}

// add adds an accepted update of connection seq (device id, a frame of
// frameLen bytes) to the round's sum.
func (r *edgeRound) add(vec []float64, id string, seq uint64, frameLen int) {
	if r.sum == nil {
		r.sum = make([]float64, r.dim)
	}
	for i, v := range vec {
		r.sum[i] += v
	}
	r.ids = append(r.ids, id)
	r.seqs = append(r.seqs, seq)
	r.bytes += int64(frameLen)
}

// takeSum puts the members summed so far in h and returns the sum's
// encoding (none without members); the next sum of the round starts
// empty.
func (r *edgeRound) takeSum(h *bus.Header) []byte {
	h.IDs, h.Seqs, h.Bytes = r.ids, r.seqs, r.bytes
	var body []byte
	if len(r.ids) > 0 {
		body = bus.EncodeVector(make([]byte, 0, 8*len(r.sum)), r.sum)
	}
	r.sum, r.ids, r.seqs, r.bytes = nil, nil, nil, 0
	return body
}

// stop closes the collection: nothing more is added or sent.
func (r *edgeRound) stop() {
	r.flushed = true
	if r.timer != nil {
		r.timer.Stop()
	}
}

// historyOf returns the history an update of ec's device in round r is
// checked against and, once included, joins: nil without one, and nil
// when r's checker does not test running sums (or there is none), since
// only a checked message may join a history (the stored sum's rounding
// bound, plausible.History.Slack, assumes it).
func (r *edgeRound) historyOf(ec *edgeConn) *check.History {
	if ec == nil || ec.hist == nil || r.chk == nil || !r.chk.Tracks() {
		return nil
	}
	return &ec.hist.h
}
