package privacy

import (
	"fmt"
	"math"
	"slices"
)

// Conversion selects how an RDP curve is turned into (epsilon, delta)-DP.
type Conversion int

const (
	// ConversionBalle2020 is the improved conversion of Balle, Barthe,
	// Gaboardi, Hsu and Sato (2020), Theorem 21 (also Canonne, Kamath and
	// Steinke 2020, Proposition 12):
	//   epsilon = rdp + ln((alpha-1)/alpha) - (ln delta + ln alpha)/(alpha-1).
	ConversionBalle2020 Conversion = iota
	// ConversionMironov2017 is the classic conversion of Mironov (2017),
	// Proposition 3: epsilon = rdp + ln(1/delta)/(alpha-1).
	ConversionMironov2017
)

func (c Conversion) String() string {
	switch c {
	case ConversionBalle2020:
		return "balle2020"
	case ConversionMironov2017:
		return "mironov2017"
	}
	return fmt.Sprintf("Conversion(%d)", int(c))
}

// DefaultOrders returns the Rényi orders the accountant uses when none are
// given: 1.1, 1.2, ..., 10.9 (step 0.1), then 11, 12, ..., 63, then 64,
// 128, 256, 512, 1024. A fresh slice on every call.
func DefaultOrders() []float64 {
	var o []float64
	for i := 1; i < 100; i++ {
		o = append(o, 1+float64(i)/10)
	}
	for i := 11; i < 64; i++ {
		o = append(o, float64(i))
	}
	return append(o, 64, 128, 256, 512, 1024)
}

// RDPAccountant composes RDPEvents over a fixed set of orders.
//
// Invariant: rdp[i] is the sum of the composed events' RDP at orders[i],
// finite and >= 0. RDP composes additively at each order (Mironov 2017,
// Proposition 1). Not safe for concurrent use.
type RDPAccountant struct {
	orders []float64
	rdp    []float64
}

// NewRDPAccountant returns an empty accountant over the given orders (each
// finite and > 1; nil means DefaultOrders()). The slice is copied.
func NewRDPAccountant(orders []float64) (*RDPAccountant, error) {
	if orders == nil {
		orders = DefaultOrders()
	}
	if len(orders) == 0 {
		return nil, invalid("no orders")
	}
	for _, a := range orders {
		if err := checkOrder(a); err != nil {
			return nil, fmt.Errorf("new rdp accountant: %w", err)
		}
	}
	return &RDPAccountant{orders: slices.Clone(orders), rdp: make([]float64, len(orders))}, nil
}

// Compose adds an event's RDP at every order. On error the accountant is
// unchanged.
func (a *RDPAccountant) Compose(e RDPEvent) error {
	add := make([]float64, len(a.orders))
	for i, alpha := range a.orders {
		r, err := e.RDP(alpha)
		if err != nil {
			return fmt.Errorf("compose %T at order %v: %w", e, alpha, err)
		}
		if !(r >= 0) || !finite(a.rdp[i]+r) {
			return fmt.Errorf("compose %T at order %v: %w: rdp %v", e, alpha, ErrNotFinite, r)
		}
		add[i] = r
	}
	for i := range a.rdp {
		a.rdp[i] += add[i]
	}
	return nil
}

// Orders returns a copy of the accountant's orders.
func (a *RDPAccountant) Orders() []float64 { return slices.Clone(a.orders) }

// RDP returns a copy of the accumulated RDP at each order.
func (a *RDPAccountant) RDP() []float64 { return slices.Clone(a.rdp) }

// Epsilon converts the accumulated RDP to (epsilon, delta)-DP with conv,
// minimising over the orders; it also returns the optimal order.
func (a *RDPAccountant) Epsilon(delta float64, conv Conversion) (eps, order float64, err error) {
	return RDPToEpsilon(a.orders, a.rdp, delta, conv)
}

// Delta is the smallest delta for which the accumulated RDP implies
// (epsilon, delta)-DP (Balle et al. 2020 conversion), with its order.
func (a *RDPAccountant) Delta(epsilon float64) (delta, order float64, err error) {
	return RDPToDelta(a.orders, a.rdp, epsilon)
}

func checkCurve(orders, rdp []float64) error {
	if len(orders) == 0 || len(orders) != len(rdp) {
		return invalid("%d orders and %d rdp values", len(orders), len(rdp))
	}
	for i, a := range orders {
		if err := checkOrder(a); err != nil {
			return err
		}
		if err := checkNonNegative("rdp", rdp[i]); err != nil {
			return err
		}
	}
	return nil
}

// RDPToEpsilon returns min over the orders of the conversion's epsilon
// (clamped at 0) and the order attaining it.
func RDPToEpsilon(orders, rdp []float64, delta float64, conv Conversion) (eps, order float64, err error) {
	if err := checkCurve(orders, rdp); err != nil {
		return 0, 0, fmt.Errorf("rdp to epsilon: %w", err)
	}
	if err := checkDelta(delta); err != nil {
		return 0, 0, fmt.Errorf("rdp to epsilon: %w", err)
	}
	if conv != ConversionBalle2020 && conv != ConversionMironov2017 {
		return 0, 0, invalid("unknown conversion %v", conv)
	}
	best, bestOrder := math.Inf(1), 0.0
	ld := math.Log(delta)
	for i, a := range orders {
		var e float64
		switch conv {
		case ConversionBalle2020:
			e = rdp[i] + math.Log1p(-1/a) - (ld+math.Log(a))/(a-1)
		case ConversionMironov2017:
			e = rdp[i] - ld/(a-1)
		}
		if e < best {
			best, bestOrder = e, a
		}
	}
	if !finite(best) {
		return 0, 0, fmt.Errorf("rdp to epsilon: %w", ErrNotFinite)
	}
	return math.Max(best, 0), bestOrder, nil
}

// RDPToDelta returns min over the orders of the Balle et al. (2020,
// Theorem 21) delta at the given epsilon >= 0,
//
//	delta = exp((alpha-1)(rdp - epsilon) + (alpha-1) ln(1 - 1/alpha) - ln alpha),
//
// capped at 1, and the order attaining it.
func RDPToDelta(orders, rdp []float64, epsilon float64) (delta, order float64, err error) {
	if err := checkCurve(orders, rdp); err != nil {
		return 0, 0, fmt.Errorf("rdp to delta: %w", err)
	}
	if !(epsilon >= 0) || math.IsInf(epsilon, 0) {
		return 0, 0, invalid("epsilon = %v, want a finite value >= 0", epsilon)
	}
	best, bestOrder := math.Inf(1), 0.0
	for i, a := range orders {
		ld := (a-1)*(rdp[i]-epsilon) + (a-1)*math.Log1p(-1/a) - math.Log(a)
		if ld < best {
			best, bestOrder = ld, a
		}
	}
	return math.Min(1, math.Exp(best)), bestOrder, nil
}

// SubsampledGaussianEpsilon is the epsilon at delta of Steps steps of the
// Poisson-subsampled Gaussian mechanism over DefaultOrders with the Balle
// et al. (2020) conversion. It is the one call the planner and the
// SoteriaFL/DP-SGD baselines need.
func SubsampledGaussianEpsilon(q, sigma float64, steps int, delta float64) (float64, error) {
	acc, err := NewRDPAccountant(nil)
	if err != nil {
		return 0, err
	}
	if err := acc.Compose(SubsampledGaussian{Rate: q, NoiseMultiplier: sigma, Steps: steps}); err != nil {
		return 0, err
	}
	eps, _, err := acc.Epsilon(delta, ConversionBalle2020)
	return eps, err
}

// SubsampledGaussianSigma is the smallest noise multiplier (to a relative
// accuracy of 1e-9, rounded up) for which Steps steps at rate q are
// (epsilon, delta)-DP by SubsampledGaussianEpsilon.
func SubsampledGaussianSigma(q float64, steps int, epsilon, delta float64) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	if steps < 1 {
		return 0, invalid("steps = %d, want >= 1", steps)
	}
	feasible := func(s float64) (bool, error) {
		e, err := SubsampledGaussianEpsilon(q, s, steps, delta)
		return err == nil && e <= epsilon, errFirst(err)
	}
	lo, hi := 0.0, 1.0
	for {
		ok, err := feasible(hi)
		if err != nil {
			return 0, fmt.Errorf("subsampled gaussian sigma: %w", err)
		}
		if ok {
			break
		}
		lo, hi = hi, 2*hi
		if hi > 1e9 {
			return 0, fmt.Errorf("subsampled gaussian sigma: %w: no sigma reaches epsilon %v", ErrNotFinite, epsilon)
		}
	}
	for hi-lo > 1e-9*hi {
		mid := lo + (hi-lo)/2
		ok, err := feasible(mid)
		if err != nil && !errorsIsNotFinite(err) {
			return 0, fmt.Errorf("subsampled gaussian sigma: %w", err)
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}
