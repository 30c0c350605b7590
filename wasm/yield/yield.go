//go:build js && wasm

package yield

import (
	"context"
	"errors"
	"fmt"

	"browserfl/shared/dataset"
	"browserfl/shared/optim"
	"browserfl/shared/privacy"
	"browserfl/shared/wire"
	"browserfl/wasm/jsw"
)

// yielding wraps a device half (Wrap) so that a round's work is split into
// separate browser tasks: the worker gives its event loop a turn (the
// page's messages: a Leave, a click) right before and right after the
// local computation, so decoding the round, computing the update, and
// saving and sending it are three tasks instead of one. The page's own
// thread never runs any of it (the device runs in a Web Worker).
//
// It also enforces single-pass use of the page's samples: the runtime
// takes batches in order from a cursor that starts at 0 and advances by b
// per prepared release, so release n+1 would reuse a sample once
// (n+1) b > the number of samples; Prepare then refuses, before any
// computation, and the runtime leaves the session.
type yielding struct {
	optim.Device
	ctx     context.Context
	batch   int          // b
	samples func() int64 // samples the device holds (more arrive while it trains)
	// measure records the "fl-prepare" measure (from jsw.Now()).
	measure func(name string, start float64)
	// onPrepared receives the time Prepare took and the size of the
	// update frame about to be sent (wire.UpdateFrameLen of the payload).
	onPrepared func(millis float64, frameBytes int)
}

// ErrDataUsed is returned by Prepare once every sample has been used.
var ErrDataUsed = errors.New("every local sample has been used once (single pass): this page takes part in no more rounds")

// Wrap returns a device.Config.NewDevice that wraps each device half
// next makes in a yielding one: samples returns how many samples the
// device holds, measure records the time of each Prepare ("fl-prepare",
// from jsw.Now()), and onPrepared (if not nil) receives that time and the
// size of the update frame about to be sent.
func Wrap(ctx context.Context, measure func(name string, start float64), samples func() int64, next func(optim.Params) (optim.Device, error), onPrepared func(float64, int)) func(optim.Params) (optim.Device, error) {
	return func(op optim.Params) (optim.Device, error) {
		d, err := next(op)
		if err != nil {
			return nil, err
		}
		return yielding{Device: d, ctx: ctx, measure: measure, batch: op.Batch, samples: samples, onPrepared: onPrepared}, nil
	}
}

// The runtime hands an algorithm's local set through this interface
// (device.Runtime's setup refuses a device half that hides it).
var _ optim.LocalDataSetter = yielding{}

// SetLocalData implements optim.LocalDataSetter for the algorithms that
// keep a local set (soteria-svrg, soteria-saga): the runtime hands it to
// the wrapped device.
func (y yielding) SetLocalData(s []dataset.Sample) error {
	if l, ok := y.Device.(optim.LocalDataSetter); ok {
		return l.SetLocalData(s)
	}
	return fmt.Errorf("%T takes no local data", y.Device)
}

// Prepare implements optim.Device.
func (y yielding) Prepare(r optim.Round, batch []dataset.Sample) (optim.Update, error) {
	if int64(y.Participations()+1)*int64(y.batch) > y.samples() {
		return optim.Update{}, ErrDataUsed
	}
	jsw.Yield(y.ctx)
	t0 := jsw.Now()
	u, err := y.Device.Prepare(r, batch)
	y.measure("fl-prepare", t0)
	if err == nil && y.onPrepared != nil {
		y.onPrepared(jsw.Now()-t0, wire.UpdateFrameLen(len(u.Payload)))
	}
	jsw.Yield(y.ctx)
	return u, err
}

// Ledger implements optim.Accountant when the wrapped device does.
func (y yielding) Ledger() privacy.Ledger {
	if a, ok := y.Device.(optim.Accountant); ok {
		return a.Ledger()
	}
	return privacy.Ledger{}
}

// NextCost implements optim.Accountant.
func (y yielding) NextCost() float64 {
	if a, ok := y.Device.(optim.Accountant); ok {
		return a.NextCost()
	}
	return 0
}

// NextSpent implements optim.Accountant.
func (y yielding) NextSpent() (privacy.Spent, error) {
	if a, ok := y.Device.(optim.Accountant); ok {
		return a.NextSpent()
	}
	return privacy.Spent{}, nil
}

// Participations implements optim.Accountant.
func (y yielding) Participations() int {
	if a, ok := y.Device.(optim.Accountant); ok {
		return a.Participations()
	}
	return 0
}

// GridRelease implements optim.GridReleaser for shared-noise sessions,
// whose runtime masks the integers of the release.
func (y yielding) GridRelease(t int) ([]int64, error) {
	if g, ok := y.Device.(optim.GridReleaser); ok {
		return g.GridRelease(t)
	}
	return nil, fmt.Errorf("%T releases no integers", y.Device)
}
