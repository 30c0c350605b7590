package engine

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"browserfl/shared/plan"
	"browserfl/shared/secagg"
	"browserfl/shared/wire"
)

// saDevice is one device of a test round: its secagg client, run as the
// device runtime runs it, from the frames it is sent.
type saDevice struct {
	key  ed25519.PrivateKey
	c    *secagg.Client
	x    []int64
	gone bool
}

// answer is the device's reply to the coordinator's message m.
func (d *saDevice) answer(t *testing.T, a plan.SecAgg, m any) any {
	t.Helper()
	var out any
	var err error
	switch m := m.(type) {
	case *wire.SecAggSetup:
		dir := secagg.Directory{}
		for _, e := range m.Members {
			dir[e.ID] = ed25519.PublicKey(e.Key[:])
		}
		if d.c, err = secagg.NewClient(a.Params(m.Session, m.Round), m.You, d.key, dir); err == nil {
			out, err = d.c.AdvertiseKeys()
		}
	case *secagg.KeyList:
		out, err = d.c.ShareKeys(m)
	case *secagg.ShareDelivery:
		out, err = d.c.MaskedInput(m, d.x)
	case *secagg.SurvivorList:
		out, err = d.c.Consistency(m)
	case *secagg.UnmaskRequest:
		out, err = d.c.Unmask(m)
	}
	if err != nil {
		t.Fatalf("device: %v", err)
	}
	return out
}

// runSecAgg runs a round of n devices of which those in goneAfter[step]
// stop answering from that step on, and returns the round.
func runSecAgg(t *testing.T, a plan.SecAgg, n int, goneAt map[string]byte) (*SecAggRound[string], map[string]*saDevice, error) {
	t.Helper()
	r, devs, out, err := startSecAgg(a, n, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		return nil, devs, err
	}
	for r.Step() != 0 {
		for id, m := range out {
			d := devs[id]
			if s, ok := goneAt[id]; ok && s <= r.Step() {
				d.gone = true
				continue
			}
			f := wire.SecAggFrame{T: t0, Step: r.Step(), Msg: d.answer(t, a, m)}
			if err := r.Receive(id, f); err != nil {
				t.Fatalf("%s at step %d: %v", id, r.Step(), err)
			}
		}
		if out, err = r.Close(); err != nil {
			return r, devs, err
		}
	}
	return r, devs, nil
}

// t0 is the test rounds' number.
const t0 = 4

// startSecAgg makes n devices with inputs from rng and opens their
// round: the round, the devices and each one's setup message.
func startSecAgg(a plan.SecAgg, n int, rng *rand.Rand) (*SecAggRound[string], map[string]*saDevice, map[string]any, error) {
	devs := map[string]*saDevice{}
	var ids []string
	for i := range n {
		id := fmt.Sprintf("d%02d", i)
		ids = append(ids, id)
		_, key, _ := ed25519.GenerateKey(nil)
		x := make([]int64, a.Dim)
		for j := range x {
			x[j] = rng.Int64N(2*a.MaxAbs+1) - a.MaxAbs
		}
		devs[id] = &saDevice{key: key, x: x}
	}
	r, setups, err := NewSecAggRound(a, secagg.SessionID{1}, wire.SecAggRound(t0, 1), ids, func(id string) ([32]byte, bool) {
		return [32]byte(devs[id].key.Public().(ed25519.PublicKey)), true
	})
	if err != nil {
		return nil, devs, nil, err
	}
	out := map[string]any{}
	for id, s := range setups {
		out[id] = s
	}
	return r, devs, out, nil
}

func testSecAgg(m, threshold int) plan.SecAgg {
	return plan.SecAgg{Threshold: threshold, MaxClients: m, Dim: 50, Step: 0x1p-10, MaxAbs: 1 << 20, Bits: 32}
}

// TestSecAggRoundDropouts: 10 devices, 3 gone after sending their masked
// input, then 3 gone before it: the sum is that of the devices whose
// masked input arrived, coordinate by coordinate, exactly.
func TestSecAggRoundDropouts(t *testing.T) {
	a := testSecAgg(10, 7)
	for _, gone := range []map[string]byte{
		{"d01": wire.StepSignature, "d04": wire.StepSignature, "d08": wire.StepSignature},
		{"d01": wire.StepMasked, "d04": wire.StepMasked, "d08": wire.StepMasked},
		{"d00": wire.StepShareKeys, "d09": wire.StepUnmasked, "d05": wire.StepMasked},
	} {
		r, devs, err := runSecAgg(t, a, 10, gone)
		if err != nil {
			t.Fatal(err)
		}
		sum, inc, err := r.Sum()
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int64, a.Dim)
		var wantInc []string
		for id, d := range devs {
			if s, ok := gone[id]; ok && s <= wire.StepMasked {
				continue
			}
			wantInc = append(wantInc, id)
			for j, v := range d.x {
				want[j] += v
			}
		}
		if len(inc) != len(wantInc) {
			t.Fatalf("gone %v: included %v, want %v", gone, inc, wantInc)
		}
		for _, id := range wantInc {
			if !r.Masked(id) {
				t.Errorf("gone %v: %s's masked input not held", gone, id)
			}
		}
		for j := range want {
			if sum[j] != float64(want[j])*a.Step {
				t.Fatalf("gone %v: coordinate %d is %v, want %v", gone, j, sum[j], float64(want[j])*a.Step)
			}
		}
	}
}

// TestSecAggRoundBelowThreshold: 4 of 10 gone at any step leave 6 < 7:
// the round fails at that step's close and gives no sum.
func TestSecAggRoundBelowThreshold(t *testing.T) {
	a := testSecAgg(10, 7)
	for _, step := range []byte{wire.StepAdvertise, wire.StepShareKeys, wire.StepMasked, wire.StepSignature, wire.StepUnmasked} {
		gone := map[string]byte{"d01": step, "d02": step, "d03": step, "d07": step}
		r, _, err := runSecAgg(t, a, 10, gone)
		if !errors.Is(err, secagg.ErrBelowThreshold) {
			t.Errorf("4 gone at step %d: err %v, want below threshold", step, err)
		}
		if r != nil {
			if _, _, err := r.Sum(); err == nil {
				t.Errorf("4 gone at step %d: a sum", step)
			}
		}
	}
}

// TestSecAggRoundSender: a device may speak only for itself, once, at
// the current step.
func TestSecAggRoundSender(t *testing.T) {
	a := testSecAgg(3, 2)
	devs := map[string]*saDevice{}
	ids := []string{"a", "b", "c"}
	for _, id := range ids {
		_, key, _ := ed25519.GenerateKey(nil)
		devs[id] = &saDevice{key: key, x: make([]int64, a.Dim)}
	}
	r, setups, err := NewSecAggRound(a, secagg.SessionID{1}, wire.SecAggRound(1, 1), ids, func(id string) ([32]byte, bool) {
		return [32]byte(devs[id].key.Public().(ed25519.PublicKey)), true
	})
	if err != nil {
		t.Fatal(err)
	}
	adv := devs["a"].answer(t, a, setups["a"])
	f := wire.SecAggFrame{T: 1, Step: wire.StepAdvertise, Msg: adv}
	if err := r.Receive("b", f); !errors.Is(err, ErrSecAggSender) {
		t.Errorf("b sending a's advertisement: %v", err)
	}
	if err := r.Receive("z", f); !errors.Is(err, ErrSecAggSender) {
		t.Errorf("a stranger: %v", err)
	}
	if err := r.Receive("a", wire.SecAggFrame{T: 1, Step: wire.StepMasked, Msg: &secagg.MaskedInput{From: 1}}); !errors.Is(err, ErrSecAggSender) {
		t.Errorf("a masked input at the advertising step: %v", err)
	}
	if err := r.Receive("a", f); err != nil {
		t.Fatal(err)
	}
	if err := r.Receive("a", f); !errors.Is(err, ErrSecAggSender) {
		t.Errorf("a second advertisement: %v", err)
	}
	if r.Done() {
		t.Error("done with one of three")
	}
}

// TestSecAggRoundDropAfterAnswer: devices that answer a step and then go
// (a page whose tab closes after its reply) are not waited for at the
// next step: once every remaining device has answered, the step is Done
// without its deadline, and the round still gives the exact sum of the
// masked inputs it holds. Dropped after answering the masked-input step,
// their inputs stay in the sum; after answering the key-sharing step,
// they stay out of it.
func TestSecAggRoundDropAfterAnswer(t *testing.T) {
	a := testSecAgg(10, 7)
	for _, after := range []byte{wire.StepShareKeys, wire.StepMasked} {
		r, devs, err := runSecAggDropping(t, a, 10, []string{"d02", "d06"}, after)
		if err != nil {
			t.Fatalf("dropped after step %d: %v", after, err)
		}
		sum, inc, err := r.Sum()
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int64, a.Dim)
		n := 0
		for id, d := range devs {
			if (id == "d02" || id == "d06") && after < wire.StepMasked {
				continue
			}
			n++
			for j, v := range d.x {
				want[j] += v
			}
		}
		if len(inc) != n {
			t.Fatalf("dropped after step %d: %d included, want %d", after, len(inc), n)
		}
		for j := range want {
			if sum[j] != float64(want[j])*a.Step {
				t.Fatalf("dropped after step %d: coordinate %d is %v, want %v", after, j, sum[j], float64(want[j])*a.Step)
			}
		}
	}
}

// runSecAggDropping runs a round of n devices in which the devices drop
// answer step after and are then dropped (Drop) at once; every step
// after it must be Done when the others have answered (the test fails
// if a step still waits for a dropped device).
func runSecAggDropping(t *testing.T, a plan.SecAgg, n int, drop []string, after byte) (*SecAggRound[string], map[string]*saDevice, error) {
	t.Helper()
	r, devs, out, err := startSecAgg(a, n, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		return nil, devs, err
	}
	for r.Step() != 0 {
		step := r.Step()
		for id, m := range out {
			d := devs[id]
			if d.gone {
				continue
			}
			f := wire.SecAggFrame{T: t0, Step: step, Msg: d.answer(t, a, m)}
			if err := r.Receive(id, f); err != nil {
				t.Fatalf("%s at step %d: %v", id, step, err)
			}
		}
		if step == after {
			for _, id := range drop {
				devs[id].gone = true
				r.Drop(id)
			}
		}
		if step > after && !r.Done() {
			t.Fatalf("step %d waits for a device dropped after answering step %d", step, after)
		}
		if out, err = r.Close(); err != nil {
			return r, devs, err
		}
	}
	return r, devs, nil
}
