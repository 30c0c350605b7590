package privacy

import (
	"math"
	"testing"
)

// FuzzLedgerUnmarshal: arbitrary bytes either decode to a ledger that
// re-encodes to the same bytes with a finite rho >= 0, or are rejected
// without changing the ledger.
func FuzzLedgerUnmarshal(f *testing.F) {
	var l Ledger
	_ = l.Charge(1, 2)
	b, _ := l.MarshalBinary()
	f.Add(b)
	f.Add([]byte{})
	f.Add(make([]byte, 17))
	f.Fuzz(func(t *testing.T, in []byte) {
		var m Ledger
		_ = m.Charge(1, 1)
		before := m
		if err := m.UnmarshalBinary(in); err != nil {
			if m != before {
				t.Fatal("ledger changed on error")
			}
			return
		}
		if !(m.Rho() >= 0) || math.IsInf(m.Rho(), 0) || m.Releases() < 0 {
			t.Fatalf("decoded rho %v releases %d", m.Rho(), m.Releases())
		}
		out, _ := m.MarshalBinary()
		if string(out) != string(in) {
			t.Fatalf("re-encoding differs: %x vs %x", out, in)
		}
		if _, err := m.Epsilon(1e-5); err != nil && m.Rho() < 1e300 {
			t.Fatalf("epsilon of decoded ledger: %v", err)
		}
	})
}
