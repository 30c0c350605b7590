package optim

import (
	"testing"

	"browserfl/shared/mechanism"
	"browserfl/shared/model"
)

// FuzzDeviceState feeds arbitrary bytes to a device's UnmarshalBinary: it
// must never panic, and a state it accepts must marshal back to the same
// bytes.
func FuzzDeviceState(f *testing.F) {
	p := baseParams("nc")
	p.Compressor = "ef+randk:0.5"
	m, _ := model.New("logreg", 5, 3)
	seeds := mechanism.NewStream(testSeed(1), mechanism.PurposeSeeds)
	dv, _ := NewDevice(p, m, seeds)
	data := synthData(mechanism.NewStream(testSeed(2), 0), 2)
	x := make([]float64, m.Dim())
	f.Add(mustMarshal(f, dv))
	dv.Prepare(Round{T: 1, X: x, XPrev: x}, data)
	f.Add(mustMarshal(f, dv))
	dv.Commit(1)
	f.Add(mustMarshal(f, dv))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, _ := NewDevice(p, m, seeds)
		if err := d.UnmarshalBinary(b); err != nil {
			return
		}
		again := mustMarshal(t, d)
		if string(again) != string(b) {
			t.Fatalf("accepted state does not round-trip")
		}
	})
}

func mustMarshal(t testing.TB, d interface{ MarshalBinary() ([]byte, error) }) []byte {
	b, err := d.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
