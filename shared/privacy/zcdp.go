package privacy

import (
	"encoding/binary"
	"fmt"
	"math"
)

// ZCDPFromPaperRho converts the rho of the noise-cancellation and
// full-participation papers to standard (Bun–Steinke 2016) zCDP rho.
//
// Those papers call a mechanism "rho^2/2-zCDP" (noise-cancellation paper,
// Theorem 5.2; full-participation paper, Theorem 4.1) and, equivalently,
// "(alpha, alpha rho^2/2)-RDP for all alpha > 1". In standard zCDP a
// mechanism is rho-zCDP when its Rényi divergence of order alpha is at most
// alpha*rho, so the paper's rho_p corresponds to the standard rho_p^2/2.
// The product's interfaces always carry the standard rho.
func ZCDPFromPaperRho(rhoPaper float64) float64 { return rhoPaper * rhoPaper / 2 }

// PaperRhoFromZCDP is the inverse of ZCDPFromPaperRho for rho >= 0: the
// paper's rho_p = sqrt(2 rho).
func PaperRhoFromZCDP(rho float64) float64 { return math.Sqrt(2 * rho) }

// GaussianZCDP is the zCDP cost of one Gaussian release with L2 sensitivity
// Delta and per-coordinate noise standard deviation sigma:
// rho = Delta^2 / (2 sigma^2) (Bun–Steinke 2016, Proposition 1.6).
func GaussianZCDP(sensitivity, sigma float64) (float64, error) {
	if err := checkNonNegative("sensitivity", sensitivity); err != nil {
		return 0, err
	}
	if err := checkPositive("sigma", sigma); err != nil {
		return 0, err
	}
	r := sensitivity / sigma
	return result("rho", r*r/2)
}

// Ledger is a device's zCDP ledger in standard (Bun–Steinke) rho.
//
// Invariant: Rho() is the sum of Delta^2/(2 sigma^2) over the releases
// charged so far and is finite and >= 0; Releases() counts them. zCDP
// composes additively (Bun–Steinke 2016, Lemma 2.3), so Rho() bounds the
// device's whole transcript. The zero value is an empty ledger, ready to use.
// A Ledger also records, for SpentEpsilon, whether a last-iterate charge
// is in it and the sum of the charges' coupling terms (Spent).
// A Ledger is not safe for concurrent use.
type Ledger struct {
	rho         float64
	releases    int
	lastIterate bool
	tv          float64 // eta: DiscretisationSlack rho_n per ordinary charge, the actual TV per last-iterate charge
}

// Cost returns the zCDP cost Delta^2/(2 sigma^2) of one Gaussian release
// without charging it.
func (l *Ledger) Cost(sensitivity, sigma float64) (float64, error) {
	return GaussianZCDP(sensitivity, sigma)
}

// Charge adds the cost of one Gaussian release to the ledger. On error the
// ledger is unchanged.
func (l *Ledger) Charge(sensitivity, sigma float64) error {
	c, err := l.Cost(sensitivity, sigma)
	if err != nil {
		return fmt.Errorf("charge: %w", err)
	}
	return l.ChargeRho(c)
}

// ChargeRho adds a zCDP cost rho >= 0 computed elsewhere (for example the
// cost of a noise-cancelled release, see NCReleaseZCDP). On error the ledger
// is unchanged.
func (l *Ledger) ChargeRho(rho float64) error {
	if err := checkNonNegative("rho", rho); err != nil {
		return fmt.Errorf("charge: %w", err)
	}
	return l.add(Charged(rho))
}

// ChargeLastIterate adds a last-iterate charge (local training with
// several passes, proven as Gaussian DP plus a total-variation term):
// rho and tv, the actual total variation of the coupled noise (see
// LastIterateCharged). From then on the ledger is read with Gaussian DP
// and its TV term only (SpentEpsilon). On error the ledger is unchanged.
func (l *Ledger) ChargeLastIterate(rho, tv float64) error {
	if err := checkNonNegative("rho", rho); err != nil {
		return fmt.Errorf("charge: %w", err)
	}
	if err := checkNonNegative("total variation", tv); err != nil {
		return fmt.Errorf("charge: %w", err)
	}
	return l.add(LastIterateCharged(rho, tv))
}

func (l *Ledger) add(c Spent) error {
	total, err := l.Spent().Add(c)
	if err != nil {
		return fmt.Errorf("charge: %w: total rho overflows", err)
	}
	l.rho, l.lastIterate, l.tv = total.Rho, total.LastIterate, total.TV
	l.releases++
	return nil
}

// Spent returns what the ledger holds, as SpentEpsilon reads it.
func (l *Ledger) Spent() Spent {
	return Spent{Rho: l.rho, LastIterate: l.lastIterate, TV: l.tv}
}

// Rho returns the total standard zCDP rho charged so far.
func (l *Ledger) Rho() float64 { return l.rho }

// Releases returns the number of releases charged so far.
func (l *Ledger) Releases() int { return l.releases }

// Epsilon returns the epsilon the device's transcript guarantees at delta
// (SpentEpsilon of Spent). An empty ledger returns 0.
func (l *Ledger) Epsilon(delta float64) (float64, error) {
	return SpentEpsilon(l.Spent(), delta)
}

// Ledger encodings: version 1 (17 bytes) holds the release count and
// rho; version 2 (26 bytes) adds a flags byte (bit 0: a last-iterate
// charge is in the ledger) and the coupling term tv.
const (
	ledgerVersion1 = 1
	ledgerVersion  = 2
)

// MarshalBinary encodes the ledger as 26 bytes: a version byte, the release
// count (uint64, big endian), rho (IEEE 754 bits, big endian), a flags
// byte (1: a last-iterate charge is in it) and tv (IEEE 754 bits).
func (l *Ledger) MarshalBinary() ([]byte, error) {
	b := make([]byte, 26)
	b[0] = ledgerVersion
	binary.BigEndian.PutUint64(b[1:9], uint64(l.releases))
	binary.BigEndian.PutUint64(b[9:17], math.Float64bits(l.rho))
	if l.lastIterate {
		b[17] = 1
	}
	binary.BigEndian.PutUint64(b[18:26], math.Float64bits(l.tv))
	return b, nil
}

// UnmarshalBinary decodes a ledger written by MarshalBinary, or by the
// version-1 encoding, which did not record last-iterate charges: such a
// ledger is read as one (Gaussian DP with the coupling bound
// DiscretisationSlack rho, which every charge ever made satisfies), never
// through the zCDP conversion. It rejects a wrong length or version, a
// negative or non-finite rho or tv, unknown flags and a release count
// that does not fit an int; on error the ledger is unchanged.
func (l *Ledger) UnmarshalBinary(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("privacy: ledger: empty")
	}
	switch {
	case b[0] == ledgerVersion1 && len(b) != 17:
		return fmt.Errorf("privacy: ledger: %d bytes, want 17 in version 1", len(b))
	case b[0] == ledgerVersion && len(b) != 26:
		return fmt.Errorf("privacy: ledger: %d bytes, want 26", len(b))
	case b[0] != ledgerVersion1 && b[0] != ledgerVersion:
		return fmt.Errorf("privacy: ledger: version %d, want %d or %d", b[0], ledgerVersion1, ledgerVersion)
	}
	n := binary.BigEndian.Uint64(b[1:9])
	if n > math.MaxInt32 {
		return fmt.Errorf("privacy: ledger: release count %d out of range", n)
	}
	rho := math.Float64frombits(binary.BigEndian.Uint64(b[9:17]))
	if !(rho >= 0) || math.IsInf(rho, 0) {
		return fmt.Errorf("privacy: ledger: rho = %v, want finite >= 0", rho)
	}
	if n == 0 && rho != 0 {
		return fmt.Errorf("privacy: ledger: rho = %v with no releases", rho)
	}
	v1 := AnyCharged(rho) // version 1: kinds unknown
	li, tv := v1.LastIterate, v1.TV
	if b[0] == ledgerVersion {
		if b[17] > 1 {
			return fmt.Errorf("privacy: ledger: flags %#x", b[17])
		}
		li, tv = b[17] == 1, math.Float64frombits(binary.BigEndian.Uint64(b[18:26]))
		if !(tv >= 0) || math.IsInf(tv, 0) {
			return fmt.Errorf("privacy: ledger: total variation = %v, want finite >= 0", tv)
		}
	}
	l.rho, l.releases, l.lastIterate, l.tv = rho, int(n), li, tv
	return nil
}
