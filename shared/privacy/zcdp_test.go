package privacy

import (
	"errors"
	"math"
	"testing"
)

func TestPaperRhoConversion(t *testing.T) {
	tests := []struct {
		rhoPaper, rho float64
	}{
		{0, 0},
		{1, 0.5},
		{2, 2},
		{math.Sqrt2, 1},
		{0.1, 0.005},
	}
	for _, tc := range tests {
		if got := ZCDPFromPaperRho(tc.rhoPaper); math.Abs(got-tc.rho) > 1e-15*math.Max(1, tc.rho) {
			t.Errorf("ZCDPFromPaperRho(%v) = %v, want %v", tc.rhoPaper, got, tc.rho)
		}
		if got := PaperRhoFromZCDP(tc.rho); math.Abs(got-tc.rhoPaper) > 1e-15*math.Max(1, tc.rhoPaper) {
			t.Errorf("PaperRhoFromZCDP(%v) = %v, want %v", tc.rho, got, tc.rhoPaper)
		}
	}
	// The paper's "(alpha, alpha rho_p^2/2)-RDP" is alpha times the
	// standard rho at every order.
	for _, rp := range []float64{0.3, 1, 4} {
		for _, alpha := range []float64{1.5, 2, 10} {
			if got, want := alpha*ZCDPFromPaperRho(rp), alpha*rp*rp/2; math.Abs(got-want) > 1e-12*want {
				t.Errorf("RDP(alpha=%v) from rho_p=%v: %v, want %v", alpha, rp, got, want)
			}
		}
	}
}

func TestLedger(t *testing.T) {
	var l Ledger
	if l.Rho() != 0 || l.Releases() != 0 {
		t.Fatalf("zero ledger: rho %v releases %d", l.Rho(), l.Releases())
	}
	if eps, err := l.Epsilon(1e-5); err != nil || eps != 0 {
		t.Fatalf("empty ledger epsilon = %v, %v; want 0, nil", eps, err)
	}
	// Three releases: Delta=2, sigma=4 -> 1/8; Delta=1, sigma=1 -> 1/2; Delta=0 -> 0.
	for _, r := range [][2]float64{{2, 4}, {1, 1}, {0, 3}} {
		if err := l.Charge(r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := l.Rho(), 0.625; math.Abs(got-want) > 1e-15 {
		t.Errorf("rho = %v, want %v", got, want)
	}
	if l.Releases() != 3 {
		t.Errorf("releases = %d, want 3", l.Releases())
	}
	c, err := l.Cost(3, 2)
	if err != nil || c != 9.0/8 {
		t.Errorf("Cost(3,2) = %v, %v; want 1.125", c, err)
	}
	if l.Rho() != 0.625 {
		t.Error("Cost changed the ledger")
	}
	b, err := l.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var m Ledger
	if err := m.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if m != l {
		t.Errorf("round trip: got %+v, want %+v", m, l)
	}
	e1, err1 := l.Epsilon(1e-6)
	e2, err2 := LedgerEpsilon(0.625, 1e-6)
	if err1 != nil || err2 != nil || e1 != e2 {
		t.Errorf("Epsilon = %v (%v), want LedgerEpsilon = %v (%v)", e1, err1, e2, err2)
	}
}

func TestLedgerBadInput(t *testing.T) {
	bad := [][2]float64{
		{1, 0}, {1, -1}, {-1, 1}, {math.NaN(), 1}, {1, math.NaN()},
		{math.Inf(1), 1}, {1, math.Inf(1)},
		{1e200, 1e-200}, // rho overflows
	}
	for _, r := range bad {
		var l Ledger
		err := l.Charge(r[0], r[1])
		if err == nil {
			t.Errorf("Charge(%v, %v): no error", r[0], r[1])
		}
		if !errors.Is(err, ErrInvalidParameter) && !errors.Is(err, ErrNotFinite) {
			t.Errorf("Charge(%v, %v): error %v wraps neither sentinel", r[0], r[1], err)
		}
		if l.Rho() != 0 || l.Releases() != 0 {
			t.Errorf("Charge(%v, %v) failed but changed the ledger", r[0], r[1])
		}
	}
	var l Ledger
	if err := l.ChargeRho(math.MaxFloat64); err != nil {
		t.Fatal(err)
	}
	if err := l.ChargeRho(math.MaxFloat64); !errors.Is(err, ErrNotFinite) {
		t.Errorf("overflowing charge: err = %v, want ErrNotFinite", err)
	}
	if _, err := l.Epsilon(1e-5); err == nil {
		t.Error("epsilon of a huge rho: no error")
	}
	for _, d := range []float64{0, 1, -0.1, 1.5, math.NaN()} {
		if _, err := l.Epsilon(d); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("Epsilon(delta=%v): err = %v, want ErrInvalidParameter", d, err)
		}
	}
}

func TestLedgerUnmarshalRejects(t *testing.T) {
	var good Ledger
	_ = good.Charge(1, 1)
	b, _ := good.MarshalBinary()
	mutate := func(f func([]byte)) []byte {
		c := append([]byte(nil), b...)
		f(c)
		return c
	}
	nan := math.Float64bits(math.NaN())
	neg := math.Float64bits(-1)
	tests := map[string][]byte{
		"empty":    nil,
		"short":    b[:16],
		"long":     append(append([]byte(nil), b...), 0),
		"version":  mutate(func(c []byte) { c[0] = 9 }),
		"nan rho":  mutate(func(c []byte) { putU64(c[9:], nan) }),
		"neg rho":  mutate(func(c []byte) { putU64(c[9:], neg) }),
		"huge n":   mutate(func(c []byte) { c[1] = 0xff }),
		"rho no n": mutate(func(c []byte) { putU64(c[1:], 0) }),
		"flags":    mutate(func(c []byte) { c[17] = 2 }),
		"nan tv":   mutate(func(c []byte) { putU64(c[18:], nan) }),
		"neg tv":   mutate(func(c []byte) { putU64(c[18:], neg) }),
		"v1 long":  mutate(func(c []byte) { c[0] = 1 }),
		"v2 short": append([]byte{2}, b[1:17]...),
	}
	for name, in := range tests {
		var l Ledger
		if err := l.UnmarshalBinary(in); err == nil {
			t.Errorf("%s: no error", name)
		}
		if l.Rho() != 0 || l.Releases() != 0 {
			t.Errorf("%s: ledger changed on error", name)
		}
	}
}

func putU64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (56 - 8*i))
	}
}

func TestZCDPToEpsilon(t *testing.T) {
	for _, rho := range []float64{1e-6, 1e-3, 0.01, 0.1, 0.5, 1, 5, 100} {
		for _, delta := range []float64{1e-10, 1e-6, 1e-3, 0.1} {
			bs, err := ZCDPToEpsilonBS(rho, delta)
			if err != nil {
				t.Fatal(err)
			}
			cks, err := ZCDPToEpsilon(rho, delta)
			if err != nil {
				t.Fatal(err)
			}
			if cks > bs {
				t.Errorf("rho=%v delta=%v: CKS %v > Bun-Steinke %v", rho, delta, cks, bs)
			}
			// The exact privacy profile of a Gaussian mechanism with
			// the same rho (Gaussian DP with mu = sqrt(2 rho)) is
			// the smallest epsilon any rho-zCDP conversion can give.
			exact, err := GDPToEpsilon(math.Sqrt(2*rho), delta)
			if err != nil {
				t.Fatal(err)
			}
			if cks < exact-1e-9 {
				t.Errorf("rho=%v delta=%v: CKS %v below the exact Gaussian %v", rho, delta, cks, exact)
			}
			// Brute force over a fine grid of orders: the optimiser
			// must be at least as good as the grid, to 1e-9.
			brute := math.Inf(1)
			for u := -14.0; u < 19; u += 0.001 {
				a := 1 + math.Exp(u)
				v := a*rho + math.Log1p(-1/a) - (math.Log(delta)+math.Log(a))/(a-1)
				brute = math.Min(brute, v)
			}
			brute = math.Max(0, math.Min(brute, bs))
			if cks > brute+1e-9*math.Max(1, brute) {
				t.Errorf("rho=%v delta=%v: CKS %v, brute force %v", rho, delta, cks, brute)
			}
		}
	}
}

func TestZCDPRoundTrip(t *testing.T) {
	for _, eps := range []float64{0.01, 0.1, 1, 3, 8, 50} {
		for _, delta := range []float64{1e-9, 1e-5, 1e-2} {
			rho, err := ZCDPFromEpsilon(eps, delta)
			if err != nil {
				t.Fatal(err)
			}
			back, err := ZCDPToEpsilon(rho, delta)
			if err != nil {
				t.Fatal(err)
			}
			if back > eps || eps-back > 1e-8*eps {
				t.Errorf("eps=%v delta=%v: rho %v -> eps %v", eps, delta, rho, back)
			}
			rhoBS, err := ZCDPFromEpsilonBS(eps, delta)
			if err != nil {
				t.Fatal(err)
			}
			if rhoBS > rho {
				t.Errorf("eps=%v delta=%v: BS inverse %v > CKS inverse %v", eps, delta, rhoBS, rho)
			}
			backBS, _ := ZCDPToEpsilonBS(rhoBS, delta)
			if math.Abs(backBS-eps) > 1e-12*eps {
				t.Errorf("BS round trip eps=%v delta=%v: %v", eps, delta, backBS)
			}
		}
	}
}
