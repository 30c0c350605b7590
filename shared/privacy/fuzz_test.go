package privacy

import (
	"errors"
	"math"
	"testing"
)

// FuzzLedgerUnmarshal: arbitrary bytes either decode to a ledger that
// re-encodes to the same bytes (a version-1 ledger: to version 2, read as
// last-iterate) with a finite rho >= 0, or are rejected without changing
// the ledger.
func FuzzLedgerUnmarshal(f *testing.F) {
	var l Ledger
	_ = l.Charge(1, 2)
	b, _ := l.MarshalBinary()
	f.Add(b)
	f.Add([]byte{})
	f.Add(make([]byte, 17))
	f.Add(append([]byte{1}, b[1:17]...))
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
		switch {
		case in[0] == ledgerVersion1:
			if string(out[1:17]) != string(in[1:17]) || m.Spent().LastIterate != (m.Rho() > 0) || m.Spent().TV != slackOf(m.Rho()) {
				t.Fatalf("version 1 %x read as %x", in, out)
			}
		case string(out) != string(in):
			t.Fatalf("re-encoding differs: %x vs %x", out, in)
		}
		_, err := m.Epsilon(1e-5)
		if err != nil && m.Rho() < 1e300 && !(m.Spent().LastIterate && errors.Is(err, ErrNotFinite)) {
			t.Fatalf("epsilon of decoded ledger: %v", err)
		}
	})
}
