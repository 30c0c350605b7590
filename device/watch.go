package device

import (
	"fmt"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
	"browserfl/shared/privacy"
)

// Prepared is one release as the device computed it, for a user interface
// on the same device (the page's "what your phone sent").
type Prepared struct {
	T int
	// Clean is the un-noised, clipped estimate of the release
	// (optim.Introspector.Clean). It is handed over in memory only: the
	// runtime never saves it and never sends it.
	Clean []float64
	// Sent is the vector the update's payload encodes (mechanism.Decode),
	// which is what the coordinator reads of it.
	Sent []float64
}

// WatchPrepared returns a device-half constructor (Config.NewDevice) that
// builds the device half with next and, after each Prepare that succeeds,
// hands watch a Prepared of fresh copies. The update Prepare returns is
// the one next's device made, unchanged, and the device's state (what
// MarshalBinary saves) is untouched: watching changes nothing that is
// sent or stored (TestWatchPreparedChangesNothing). watch runs inside the
// runtime's lock, on the goroutine that prepares the update: it must not
// call the runtime, and should return quickly. A device half without
// optim.Introspector is returned unwatched.
func WatchPrepared(next func(optim.Params) (optim.Device, error), watch func(Prepared)) func(optim.Params) (optim.Device, error) {
	return func(p optim.Params) (optim.Device, error) {
		d, err := next(p)
		if err != nil {
			return nil, err
		}
		if _, ok := d.(optim.Introspector); !ok || watch == nil {
			return d, nil
		}
		return &watched{Device: d, watch: watch}, nil
	}
}

// watched is a device half whose releases are shown to watch.
type watched struct {
	optim.Device
	watch func(Prepared)
}

// Prepare implements optim.Device.
func (w *watched) Prepare(r optim.Round, batch []dataset.Sample) (optim.Update, error) {
	u, err := w.Device.Prepare(r, batch)
	if err != nil {
		return u, err
	}
	if pr, err := w.prepared(u); err == nil {
		w.watch(pr)
	}
	return u, nil
}

// prepared reads the release just made: its clean estimate and its
// payload decoded.
func (w *watched) prepared(u optim.Update) (Prepared, error) {
	_, d, err := mechanism.Header(u.Payload)
	if err != nil {
		return Prepared{}, fmt.Errorf("device: payload: %w", err)
	}
	pr := Prepared{T: u.T, Clean: make([]float64, d), Sent: make([]float64, d)}
	if err := w.Device.(optim.Introspector).Clean(pr.Clean); err != nil {
		return Prepared{}, err
	}
	if err := mechanism.Decode(pr.Sent, u.Payload); err != nil {
		return Prepared{}, err
	}
	return pr, nil
}

// Ledger implements optim.Accountant.
func (w *watched) Ledger() privacy.Ledger {
	if a, ok := w.Device.(optim.Accountant); ok {
		return a.Ledger()
	}
	return privacy.Ledger{}
}

// NextCost implements optim.Accountant.
func (w *watched) NextCost() float64 {
	if a, ok := w.Device.(optim.Accountant); ok {
		return a.NextCost()
	}
	return 0
}

// NextSpent implements optim.Accountant.
func (w *watched) NextSpent() (privacy.Spent, error) {
	if a, ok := w.Device.(optim.Accountant); ok {
		return a.NextSpent()
	}
	return privacy.Spent{}, nil
}

// Participations implements optim.Accountant.
func (w *watched) Participations() int {
	if a, ok := w.Device.(optim.Accountant); ok {
		return a.Participations()
	}
	return 0
}

// PendingRound implements optim.Resumer.
func (w *watched) PendingRound() int {
	if r, ok := w.Device.(optim.Resumer); ok {
		return r.PendingRound()
	}
	return 0
}

// SetLocalData implements optim.LocalDataSetter.
func (w *watched) SetLocalData(s []dataset.Sample) error {
	if l, ok := w.Device.(optim.LocalDataSetter); ok {
		return l.SetLocalData(s)
	}
	return fmt.Errorf("device: %T takes no local data", w.Device)
}

// GridRelease implements optim.GridReleaser: a shared-noise session masks
// the integers of the release (secagg.go).
func (w *watched) GridRelease(t int) ([]int64, error) {
	if g, ok := w.Device.(optim.GridReleaser); ok {
		return g.GridRelease(t)
	}
	return nil, fmt.Errorf("device: %T releases no integers", w.Device)
}
