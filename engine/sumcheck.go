package engine

import (
	"errors"
	"fmt"
	"math"

	"browserfl/shared/optim/plausible"
)

// The check stage of a shared-noise round (wire.SharedNoiseAlgorithm).
//
// In such a round the coordinator sees no device's release, only the sum
// secure aggregation unmasks, so the per-message tests (package check)
// cannot run; the sum's tests (plausible.SumChecker) are all it has. Both
// shells run them here, on the decoded sum: the coordinator on what
// secure aggregation gave it (coordinator/secround), the simulator on the
// same sum computed in the ring (RingSum). A sum that fails them (a value
// outside the honest range, a wrapped ring, not finite, a norm over the
// bound) fails the round: the shell discards it exactly as a secure
// aggregation below its threshold (Collected.Failed), every member told
// "excluded", so every device aborts its pending release.

// ErrSumImplausible is wrapped by CheckSum for a round's sum that no n
// honest devices make (except with probability at most
// plausible.UpdateRejectProb over the session). It also matches
// plausible.ErrImplausible.
var ErrSumImplausible = errors.New("engine: the round's sum is not one honest devices make")

// CheckSum is the check stage of a shared-noise round: c's tests of the
// decoded sum of n releases. It returns nil, or an error wrapping
// ErrSumImplausible and the *plausible.Rejection.
func CheckSum(c *plausible.SumChecker, sum []float64, n int) error {
	if err := c.Check(sum, n); err != nil {
		return fmt.Errorf("%w: %w", ErrSumImplausible, err)
	}
	return nil
}

// RingSum writes into dst what secure aggregation's server decodes from
// the releases xs (each a vector of grid integers, as a device's client
// masks them): their sum modulo 2^bits, read as a signed integer of
// [-2^(bits-1), 2^(bits-1)), times step. An honest set of releases
// (every |x_j| <= maxAbs, at most the ring's cohort of them) never wraps
// (docs/secagg.md, "The ring"); a release beyond that range may.
func RingSum(dst []float64, xs [][]int64, bits int, step float64) {
	mask := uint64(math.MaxUint64)
	if bits < 64 {
		mask = 1<<bits - 1
	}
	half := uint64(1) << (bits - 1)
	for j := range dst {
		var s uint64
		for _, x := range xs {
			s += uint64(x[j])
		}
		s &= mask
		v := int64(s)
		if s >= half && bits < 64 {
			v = int64(s) - int64(mask) - 1
		}
		dst[j] = float64(v) * step
	}
}
