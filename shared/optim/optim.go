// Package optim holds every training algorithm of the product as a server
// half and a device half: plain Go with no I/O, deterministic given their
// entropy sources. The simulator, the coordinator, the native headless
// device and the WebAssembly page all run these same halves; only the
// transport between them differs.
//
// A round t goes:
//
//	server.Next()                      -> Round{T, X, XPrev}   (broadcast to the cohort)
//	device.Prepare(round, batch)       -> Update               (ledger charged, N_i advanced)
//	server.Apply(t, includedUpdates)                            (aggregate, step; caller persists)
//	device.Commit(t) or device.Abort(t)                         (Y_i / residual advanced on inclusion only)
//
// This is DESIGN principle 3 (exactly-once noise state): a device charges its
// privacy ledger when it sends, and commits its noise state only when the
// server confirms the update was included.
package optim

import "browserfl/shared/dataset"

// Round is what the server sends to each device chosen at round T.
type Round struct {
	T     int       // round index, 1-based
	X     []float64 // query point x_t (the current iterate for SGD-style algorithms)
	XPrev []float64 // x_{t-1} for mu^2-SGD corrections; nil when the algorithm does not use it
}

// Update is a device's reply to a Round.
type Update struct {
	T       int
	Payload []byte // encoded vector (see shared/mechanism codecs): dense float32 or compressed
}

// Server is the server half of an algorithm.
type Server interface {
	// Next returns the broadcast of the next round.
	Next() Round
	// Apply aggregates the included updates of round t and takes the step.
	// It rejects malformed payloads, wrong rounds and NaN/Inf with an error
	// and leaves the state untouched in that case.
	Apply(t int, updates []Update) error
	// Model returns the parameters to evaluate (do not modify).
	Model() []float64
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
}

// Device is the device half of an algorithm.
type Device interface {
	// Prepare computes the reply to r from a minibatch of the device's
	// own samples, charges the ledger and holds the new noise state as
	// pending for round r.T.
	Prepare(r Round, batch []dataset.Sample) (Update, error)
	// Commit makes the pending state of round t permanent (the server
	// confirmed inclusion).
	Commit(t int) error
	// Abort discards the pending state of round t (the update was not
	// included); the privacy already charged stays charged.
	Abort(t int) error
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
}
