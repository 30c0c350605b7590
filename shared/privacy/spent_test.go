package privacy

import (
	"errors"
	"math"
	"testing"
)

// gdpPlusTV is the reference reading of a last-iterate ledger, computed
// here from GDPToDelta alone: the smallest epsilon (to 1e-12) with
// delta_GDP(sqrt(2 rho), epsilon) + (1 + e^epsilon) tv <= delta.
func gdpPlusTV(t *testing.T, rho, tv, delta float64) float64 {
	t.Helper()
	f := func(eps float64) float64 {
		d, err := GDPToDelta(math.Sqrt(2*rho), eps)
		if err != nil {
			t.Fatal(err)
		}
		return d + (1+math.Exp(eps))*tv
	}
	lo, hi := 0.0, 0.0
	for f(hi) > delta { // the tests' ledgers are feasible below 100
		lo, hi = hi, hi+1e-3
		if hi > 100 {
			t.Fatalf("rho %v tv %v delta %v: no epsilon below 100", rho, tv, delta)
		}
	}
	for hi-lo > 1e-12 {
		if mid := (lo + hi) / 2; f(mid) <= delta {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// TestLastIterateReadAsGDP: a ledger holding a last-iterate charge is
// read with Gaussian DP plus its actual total-variation term, never
// through the zCDP (CKS) conversion, at the owner deltas 1e-5 and 1e-10.
// The cases are chosen where the ordinary reading takes the CKS route
// (CKS below GDP with the slack bound DiscretisationSlack rho), so the
// test fails if a last-iterate ledger is read that way: the
// K = E = 25 session at 1e-10 (rho 1.388: CKS 12.0692, GDP with its
// actual TV 11.576) and rho 10 at 1e-5 (CKS 30.111, GDP + TV 28.373).
// Deterministic: no false failures.
func TestLastIterateReadAsGDP(t *testing.T) {
	const actualTV = 1e-25 // about K E d RoundedGaussianTV(sigma_Z) of a local session (docs/privacy.md 4b)
	tests := []struct {
		name           string
		rho, tv, delta float64
	}{
		{"1e-5 rho 10", 10, actualTV, 1e-5},
		{"1e-5 rho 8", 8, 1e-22, 1e-5},
		{"1e-10 rho 1.388", 1.388, actualTV, 1e-10},
		{"1e-10 rho 3", 3, 1e-22, 1e-10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cks, err := ZCDPToEpsilon(tc.rho, tc.delta)
			if err != nil {
				t.Fatal(err)
			}
			ordinary, err := LedgerEpsilon(tc.rho, tc.delta)
			if err != nil {
				t.Fatal(err)
			}
			want := gdpPlusTV(t, tc.rho, tc.tv, tc.delta)
			if ordinary != cks || !(want < cks) {
				t.Fatalf("case does not tell the routes apart: ordinary reading %v, CKS %v, GDP + TV %v", ordinary, cks, want)
			}
			var l Ledger
			if err := l.ChargeRho(0); err != nil { // an ordinary release first: the flag must stick
				t.Fatal(err)
			}
			if err := l.ChargeLastIterate(tc.rho, tc.tv); err != nil {
				t.Fatal(err)
			}
			for name, read := range map[string]func() (float64, error){
				"SpentEpsilon":   func() (float64, error) { return SpentEpsilon(LastIterateCharged(tc.rho, tc.tv), tc.delta) },
				"Ledger.Epsilon": func() (float64, error) { return l.Epsilon(tc.delta) },
			} {
				got, err := read()
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if math.Abs(got-want) > 1e-9*want {
					t.Errorf("%s = %.12g, want GDP + TV %.12g (CKS %.12g, ordinary %.12g)", name, got, want, cks, ordinary)
				}
				if got == cks || got == ordinary {
					t.Errorf("%s = %.12g: the zCDP route", name, got)
				}
				d, err := SpentDelta(LastIterateCharged(tc.rho, tc.tv), got)
				if err != nil || d > tc.delta {
					t.Errorf("%s: delta at the stated epsilon %v (%v), over %v", name, d, err, tc.delta)
				}
			}
		})
	}
}

// TestLastIterateNoEpsilon: a TV term too large for delta leaves no
// epsilon (ErrNotFinite) instead of falling back to the zCDP one.
func TestLastIterateNoEpsilon(t *testing.T) {
	// At 1e-10, rho 1.388 with the largest TV a device allows
	// (DiscretisationSlack rho): (1 + e^eps) tv > 1e-10 already at eps 4.
	_, err := SpentEpsilon(LastIterateCharged(1.388, DiscretisationSlack*1.388), 1e-10)
	if !errors.Is(err, ErrNotFinite) {
		t.Errorf("err = %v, want ErrNotFinite", err)
	}
}

// TestSpentAdd: composition adds rho and the coupling terms (rounded up),
// and one last-iterate charge makes the whole ledger last-iterate.
func TestSpentAdd(t *testing.T) {
	a, b := Charged(0.5), LastIterateCharged(0.25, 1e-20)
	s, err := a.Add(b)
	if err != nil {
		t.Fatal(err)
	}
	if s.Rho != 0.75 || !s.LastIterate || !(s.TV >= DiscretisationSlack*0.5+1e-20) {
		t.Errorf("sum = %+v", s)
	}
	if a.TV < DiscretisationSlack*0.5 {
		t.Errorf("Charged(0.5).TV = %v below the slack bound", a.TV)
	}
	if _, err := a.Add(Spent{Rho: math.NaN()}); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("NaN: err = %v", err)
	}
	if _, err := Charged(math.MaxFloat64).Add(Charged(math.MaxFloat64)); !errors.Is(err, ErrNotFinite) {
		t.Errorf("overflow: err = %v", err)
	}
	var l Ledger
	if err := l.ChargeRho(0.5); err != nil {
		t.Fatal(err)
	}
	if err := l.ChargeLastIterate(0.25, 1e-20); err != nil {
		t.Fatal(err)
	}
	got := l.Spent()
	if got.Rho != 0.75 || !got.LastIterate || !(got.TV >= DiscretisationSlack*0.5+1e-20 && got.TV <= s.TV*(1+1e-12)) || l.Releases() != 2 {
		t.Errorf("ledger %+v (%d releases), want %+v", got, l.Releases(), s)
	}
	if err := l.ChargeLastIterate(1, -1); !errors.Is(err, ErrInvalidParameter) || l.Spent() != got {
		t.Errorf("negative tv: err = %v, ledger %+v", err, l.Spent())
	}
}

// TestLedgerVersions: a last-iterate ledger survives its encoding, and a
// version-1 encoding (which did not record last-iterate charges) is read
// as a last-iterate ledger with the slack bound as its TV term, never by
// the zCDP conversion.
func TestLedgerVersions(t *testing.T) {
	var l Ledger
	if err := l.ChargeLastIterate(1.388, 1e-25); err != nil {
		t.Fatal(err)
	}
	b, _ := l.MarshalBinary()
	var m Ledger
	if err := m.UnmarshalBinary(b); err != nil || m != l {
		t.Fatalf("round trip: %+v (%v), want %+v", m, err, l)
	}
	old := append([]byte{ledgerVersion1}, b[1:17]...)
	var o Ledger
	if err := o.UnmarshalBinary(old); err != nil {
		t.Fatal(err)
	}
	if want := (Spent{Rho: 1.388, LastIterate: true, TV: slackOf(1.388)}); o.Spent() != want || o.Releases() != 1 {
		t.Errorf("version 1 read as %+v, want %+v", o.Spent(), want)
	}
	got, err := o.Epsilon(1e-5)
	want := gdpPlusTV(t, 1.388, slackOf(1.388), 1e-5)
	if err != nil || math.Abs(got-want) > 1e-9*want {
		t.Errorf("version 1 ledger: epsilon %v (%v), want %v", got, err, want)
	}
}
