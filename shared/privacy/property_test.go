package privacy

import (
	"math"
	"testing"
)

func TestConversionProperties(t *testing.T) {
	// epsilon(rho, delta) grows with rho and shrinks as delta grows.
	prev := -1.0
	for _, rho := range []float64{0, 1e-4, 1e-2, 0.1, 1, 10} {
		e, err := ZCDPToEpsilon(rho, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		if e <= prev {
			t.Errorf("rho %v: eps %v not above %v", rho, e, prev)
		}
		prev = e
	}
	prev = math.Inf(1)
	for _, d := range []float64{1e-12, 1e-8, 1e-4, 0.1, 0.5} {
		e, _ := ZCDPToEpsilon(0.5, d)
		if e >= prev {
			t.Errorf("delta %v: eps %v not below %v", d, e, prev)
		}
		prev = e
	}
}

func TestGDPRoundTripAndMonotone(t *testing.T) {
	for _, mu := range []float64{0.05, 0.5, 1, 3, 10} {
		for _, delta := range []float64{1e-9, 1e-5, 1e-2} {
			eps, err := GDPToEpsilon(mu, delta)
			if err != nil {
				t.Fatal(err)
			}
			d, err := GDPToDelta(mu, eps)
			if err != nil {
				t.Fatal(err)
			}
			// eps is rounded up to 1e-10, so the profile there is at or
			// just below delta.
			if d > delta*(1+1e-9) || (eps > 0 && d < delta*(1-1e-6)) {
				t.Errorf("mu=%v delta=%v: eps %v -> delta %v", mu, delta, eps, d)
			}
			if eps > 0 {
				mu2, err := GDPFromEpsilon(eps, delta)
				if err != nil || math.Abs(mu2-mu) > 1e-6*mu {
					t.Errorf("mu=%v delta=%v: back to mu %v (%v)", mu, delta, mu2, err)
				}
			}
		}
	}
	// The composition of Gaussians is exact in GDP: two releases with
	// mu 3/5 and 4/5 are one with mu 1.
	mu, err := ComposeGDP(0.6, 0.8)
	if err != nil || math.Abs(mu-1) > 1e-15 {
		t.Errorf("ComposeGDP = %v (%v)", mu, err)
	}
	// Bad input.
	for _, c := range [][2]float64{{-1, 1e-5}, {math.NaN(), 1e-5}, {1, 0}, {1, 1}} {
		if _, err := GDPToEpsilon(c[0], c[1]); err == nil {
			t.Errorf("GDPToEpsilon(%v, %v) accepted", c[0], c[1])
		}
	}
	if _, err := GDPToDelta(1, -1); err == nil {
		t.Error("negative epsilon accepted")
	}
	if _, err := PoissonSubsampledGDP(0, 1, 10); err == nil {
		t.Error("q = 0 accepted")
	}
	if _, err := UniformSubsampledGDP(0.1, 1, -1); err == nil {
		t.Error("negative steps accepted")
	}
	if _, err := GaussianGDP(1, 0); err == nil {
		t.Error("sigma 0 accepted")
	}
}
