package privacy

import (
	"errors"
	"math"
	"testing"
)

// exactRoundingTV computes TV(N_Z(0, sigma^2), round(N(0, s2))) by summing
// |p(k) - q(k)| over |k| <= 14 sigma (the mass beyond is below 1e-40).
// q(k) is a difference of erfc values of positive arguments, so for
// sigma <= 128 the float64 error of the sum is below 1e-13 (about 1% of the
// distance at sigma = 128 and less below).
func exactRoundingTV(sigma, s2 float64) float64 {
	K := int(14 * sigma)
	z := 1.0
	for k := 1; k <= K; k++ {
		z += 2 * math.Exp(-float64(k*k)/(2*sigma*sigma))
	}
	c := 1 / math.Sqrt(2*s2)
	sum := 0.0
	for k := 0; k <= K; k++ {
		p := math.Exp(-float64(k*k)/(2*sigma*sigma)) / z
		var q float64
		if k == 0 {
			q = math.Erf(0.5 * c)
		} else {
			q = 0.5 * (math.Erfc((float64(k)-0.5)*c) - math.Erfc((float64(k)+0.5)*c))
		}
		w := 2.0
		if k == 0 {
			w = 1
		}
		sum += w * math.Abs(p-q)
	}
	return sum / 2
}

// TestRoundedGaussianTV checks the proven bound against the distance
// computed directly. The bound must hold (a constant 10% too small would
// still hold: the proof's slack is a factor of about 5, see the ratio
// below) and must not be vacuous (within a factor 10 of the truth). The
// coupling needs the 1/12: rounding N(0, sigma^2) itself is about
// 0.02/sigma^2 away, more than 1,000 times the bound at sigma = 64, which
// the last check shows.
func TestRoundedGaussianTV(t *testing.T) {
	for _, sigma := range []float64{64, 80, 100, 128} {
		got := exactRoundingTV(sigma, sigma*sigma-1.0/12)
		bound := RoundedGaussianTV(sigma)
		if !(got <= bound) {
			t.Errorf("sigma %v: TV %.4g exceeds the bound %.4g", sigma, got, bound)
		}
		if !(got >= bound/10) {
			t.Errorf("sigma %v: TV %.4g is below a tenth of the bound %.4g: the check has no power", sigma, got, bound)
		}
		t.Logf("sigma %v: TV %.4g, bound %.4g, ratio %.3f", sigma, got, bound, got/bound)
	}
	if got, bound := exactRoundingTV(64, 64*64), RoundedGaussianTV(64); !(got > 1000*bound) {
		t.Errorf("rounding N(0, sigma^2) itself: TV %.4g, want far above the bound %.4g", got, bound)
	}
	for _, sigma := range []float64{63.999, 1, 0, -1, math.NaN()} {
		if b := RoundedGaussianTV(sigma); !math.IsInf(b, 1) {
			t.Errorf("RoundedGaussianTV(%v) = %v, want +Inf (not proven there)", sigma, b)
		}
	}
}

// TestDiscretisationSlackConstant recomputes kappa from its derivation:
// d RoundedGaussianTV(sigma_Z) <= kappa Delta_Z^2 / (2 sigma_Z^2) for
// sigma_Z >= 64 and Delta_Z^2 >= 10^6 d (the grid's factor 1000).
func TestDiscretisationSlackConstant(t *testing.T) {
	worst := 0.0
	for _, sz := range []float64{MinDiscreteSigma, 65, 100, 1e4, 1 << 30} {
		for _, d := range []float64{1, 7850, 1e7} {
			dz := 1000 * math.Sqrt(d)
			r := d * RoundedGaussianTV(sz) / (dz * dz / (2 * sz * sz))
			worst = math.Max(worst, r)
		}
	}
	if !(worst <= DiscretisationSlack) {
		t.Errorf("kappa = %v, but the derivation needs %v", DiscretisationSlack, worst)
	}
	if !(worst > DiscretisationSlack/1.1) {
		t.Errorf("kappa = %v is more than 10%% above the %v the derivation needs", DiscretisationSlack, worst)
	}
}

// TestLedgerConversion: the device's conversion against published and
// independent figures.
func TestLedgerConversion(t *testing.T) {
	// The reference figure: epsilon 8 at delta 1e-5 allows rho 1.388 with
	// exact Gaussian DP (mu = sqrt(2 rho) = 1.666), 1.2297 with zCDP/CKS.
	r, err := LedgerRho(8, 1e-5)
	if err != nil || math.Abs(r-1.388) > 5e-4 {
		t.Errorf("LedgerRho(8, 1e-5) = %v, %v; want 1.388", r, err)
	}
	rz, _ := ZCDPFromEpsilon(8, 1e-5)
	if math.Abs(rz-1.2297) > 5e-4 || !(r > 1.12*rz) {
		t.Errorf("zCDP inverse %v, ledger inverse %v: want 1.2297 and 13%% more", rz, r)
	}
	for _, tc := range []struct{ eps, delta float64 }{{1, 1e-5}, {2, 1e-5}, {4, 1e-5}, {8, 1e-5}, {8, 1e-9}, {0.5, 1e-3}} {
		rho, err := LedgerRho(tc.eps, tc.delta)
		if err != nil {
			t.Fatal(err)
		}
		// Round trip: the budget converts back to at most epsilon, and 1e-9
		// more rho goes over.
		e, err := LedgerEpsilon(rho, tc.delta)
		if err != nil || e > tc.eps {
			t.Errorf("(%v, %v): rho %v converts back to %v (%v)", tc.eps, tc.delta, rho, e, err)
		}
		if e2, _ := LedgerEpsilon(rho*(1+1e-9), tc.delta); !(e2 > tc.eps) {
			t.Errorf("(%v, %v): rho %v (1+1e-9) converts to %v, not over", tc.eps, tc.delta, rho, e2)
		}
		// Never looser than zCDP, never tighter than Gaussian DP alone.
		mu := math.Sqrt(2 * rho)
		z, _ := ZCDPToEpsilon(rho, tc.delta)
		g, _ := GDPToEpsilon(mu, tc.delta)
		if !(e <= z && e >= g) {
			t.Errorf("(%v, %v): ledger epsilon %v outside [GDP %v, zCDP %v]", tc.eps, tc.delta, e, g, z)
		}
		if e == z {
			// At delta 1e-9 the discretisation term alone, (1 + e^8)
			// kappa rho, exceeds delta: zCDP is the guarantee.
			if tc.delta >= 1e-6 {
				t.Errorf("(%v, %v): zCDP figure, want the Gaussian-DP one", tc.eps, tc.delta)
			}
			continue
		}
		// The guarantee is what the coupling proves: the Gaussian-DP
		// profile of mu = sqrt(2 rho) plus (1 + e^eps) kappa rho, with
		// both terms recomputed here.
		a := 0.5 * math.Erfc((e/mu-mu/2)/math.Sqrt2)
		b := math.Exp(e) * 0.5 * math.Erfc((e/mu+mu/2)/math.Sqrt2)
		if total := a - b + (1+math.Exp(e))*1.25e-12*rho; total > tc.delta*(1+1e-9) {
			t.Errorf("(%v, %v): delta at the stated epsilon is %v", tc.eps, tc.delta, total)
		}
	}
	// Where the discretisation term dominates (large epsilon), zCDP is
	// the bound: without the term, Gaussian DP would claim far less.
	e, _ := LedgerEpsilon(10, 1e-5)
	z, _ := ZCDPToEpsilon(10, 1e-5)
	g, _ := GDPToEpsilon(math.Sqrt(20), 1e-5)
	if e != z || !(g < z-1) {
		t.Errorf("rho 10: ledger %v, zCDP %v, GDP alone %v: want the zCDP figure", e, z, g)
	}
	if e, err := LedgerEpsilon(0, 1e-5); e != 0 || err != nil {
		t.Errorf("LedgerEpsilon(0) = %v, %v", e, err)
	}
	for _, bad := range [][2]float64{{-1, 1e-5}, {1, 0}, {1, 1}, {math.NaN(), 1e-5}} {
		if _, err := LedgerEpsilon(bad[0], bad[1]); err == nil {
			t.Errorf("LedgerEpsilon(%v, %v) accepted", bad[0], bad[1])
		}
	}
	for _, bad := range [][2]float64{{0, 1e-5}, {1, 0}, {math.Inf(1), 1e-5}} {
		if _, err := LedgerRho(bad[0], bad[1]); err == nil {
			t.Errorf("LedgerRho(%v, %v) accepted", bad[0], bad[1])
		}
	}
}

// TestLedgerEpsilonHugeRho: a ledger too large for the GDP conversion
// (FuzzLedgerUnmarshal found rho = 5.9e11, where GDPToEpsilon's search
// ends) still gets a finite epsilon, the zCDP one, at every delta; only a
// rho whose zCDP epsilon overflows float64 gets an error, wrapping
// ErrNotFinite, and never a non-finite number.
func TestLedgerEpsilonHugeRho(t *testing.T) {
	for _, tc := range []struct {
		rho, delta float64
		finite     bool
	}{
		{5.9e11, 1e-5, true},
		{1e12, 1e-5, true},
		{1e12, 1e-9, true},
		{3e15, 0.5, true},
		{1e100, 1e-5, true},
		{1e300, 1e-5, true},
		{math.MaxFloat64, 1e-5, false},
	} {
		eps, err := LedgerEpsilon(tc.rho, tc.delta)
		if !tc.finite {
			if !errors.Is(err, ErrNotFinite) || eps != 0 {
				t.Errorf("LedgerEpsilon(%g, %g) = %v, %v; want an error wrapping ErrNotFinite", tc.rho, tc.delta, eps, err)
			}
			continue
		}
		z, zerr := ZCDPToEpsilon(tc.rho, tc.delta)
		if err != nil || zerr != nil || !finite(eps) || eps != z {
			t.Errorf("LedgerEpsilon(%g, %g) = %v, %v; want the zCDP epsilon %v (%v)", tc.rho, tc.delta, eps, err, z, zerr)
		}
	}
}
