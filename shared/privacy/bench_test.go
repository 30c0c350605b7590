package privacy

import "testing"

func BenchmarkSubsampledGaussianRDP(b *testing.B) {
	for _, c := range []struct {
		name            string
		q, sigma, alpha float64
	}{
		{"int/alpha=32", 0.01, 1.1, 32},
		{"int/alpha=1024", 0.01, 1.1, 1024},
		{"frac/alpha=2.5", 0.01, 1.1, 2.5},
		{"frac/alpha=1.01,q=0.5", 0.5, 1, 1.01},
		{"frac/alpha=256.1", 0.01, 1.1, 256.1},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := SubsampledGaussianRDP(c.q, c.sigma, c.alpha); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSubsampledGaussianEpsilon(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := SubsampledGaussianEpsilon(0.01, 1.1, 10000, 1e-5); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkZCDPToEpsilon(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := ZCDPToEpsilon(0.37, 1e-5); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkZCDPFromEpsilon(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := ZCDPFromEpsilon(4, 1e-5); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLedgerCharge(b *testing.B) {
	var l Ledger
	for i := 0; i < b.N; i++ {
		if err := l.Charge(0.0625, 0.3); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLedgerEpsilon is the device's conversion (a page's meter, the
// simulator's per-round worst device, the device's per-release check).
func BenchmarkLedgerEpsilon(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := LedgerEpsilon(1.3, 1e-5); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLedgerRho is the inverse (once per session and device).
func BenchmarkLedgerRho(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := LedgerRho(8, 1e-5); err != nil {
			b.Fatal(err)
		}
	}
}
