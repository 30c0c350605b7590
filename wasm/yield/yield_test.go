//go:build js && wasm

package yield

import (
	"context"
	"errors"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/optim"
	"browserfl/shared/privacy"
	"browserfl/shared/wire"
)

// The tests run under node (make test-wasm-features: GOOS=js GOARCH=wasm
// with go_js_wasm_exec), whose setTimeout and performance are the
// worker's.

// counting is a device half that counts its releases.
type counting struct{ n int }

func (c *counting) Prepare(r optim.Round, _ []dataset.Sample) (optim.Update, error) {
	c.n++
	return optim.Update{T: r.T, Payload: make([]byte, 8)}, nil
}
func (c *counting) Commit(int) error                  { return nil }
func (c *counting) Abort(int) error                   { return nil }
func (c *counting) MarshalBinary() ([]byte, error)    { return nil, nil }
func (c *counting) UnmarshalBinary([]byte) error      { return nil }
func (c *counting) Ledger() privacy.Ledger            { return privacy.Ledger{} }
func (c *counting) NextCost() float64                 { return 0 }
func (c *counting) NextSpent() (privacy.Spent, error) { return privacy.Spent{}, nil }
func (c *counting) Participations() int               { return c.n }

// TestSinglePass: release n+1 is refused, before the device half
// computes anything, once (n+1) b exceeds the samples held, and allowed
// again when more samples arrive; each release is measured and
// reported with its frame's size.
func TestSinglePass(t *testing.T) {
	inner := &counting{}
	held := int64(5)
	var measured []string
	var frames []int
	newDev := Wrap(context.Background(),
		func(name string, _ float64) { measured = append(measured, name) },
		func() int64 { return held },
		func(optim.Params) (optim.Device, error) { return inner, nil },
		func(_ float64, frame int) { frames = append(frames, frame) })
	d, err := newDev(optim.Params{Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	for r := 1; r <= 2; r++ {
		if _, err := d.Prepare(optim.Round{T: r}, nil); err != nil {
			t.Fatalf("release %d of 5 samples at b = 2: %v", r, err)
		}
	}
	if _, err := d.Prepare(optim.Round{T: 3}, nil); !errors.Is(err, ErrDataUsed) {
		t.Fatalf("release 3 of 5 samples at b = 2: %v, want ErrDataUsed", err)
	}
	if inner.n != 2 {
		t.Fatalf("the device half prepared %d releases, want 2 (the refused one computes nothing)", inner.n)
	}
	held = 6
	if _, err := d.Prepare(optim.Round{T: 3}, nil); err != nil {
		t.Fatalf("release 3 of 6 samples at b = 2: %v", err)
	}
	if len(measured) != 3 || measured[0] != "fl-prepare" {
		t.Errorf("measures %q, want three fl-prepare", measured)
	}
	if want := wire.UpdateFrameLen(8); len(frames) != 3 || frames[0] != want {
		t.Errorf("frames %v, want three of %d bytes", frames, want)
	}
}

// TestForwards: the optional interfaces reach the wrapped device half,
// and one it lacks is an error, never a silent no-op.
func TestForwards(t *testing.T) {
	inner := &counting{n: 4}
	d := yielding{Device: inner, ctx: context.Background(), batch: 1, samples: func() int64 { return 10 },
		measure: func(string, float64) {}}
	if got := d.Participations(); got != 4 {
		t.Errorf("Participations = %d, want the wrapped device's 4", got)
	}
	if err := d.SetLocalData(nil); err == nil {
		t.Error("SetLocalData on a device half that takes no local data: no error")
	}
	if _, err := d.GridRelease(1); err == nil {
		t.Error("GridRelease on a device half that releases no integers: no error")
	}
}
