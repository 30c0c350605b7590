package privacy

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidParameter is wrapped by every error this package returns for a
// parameter outside its domain (delta outside (0, 1), a non-positive sigma,
// a sampling rate outside (0, 1], an order at or below 1, NaN or Inf).
// Test with errors.Is.
var ErrInvalidParameter = errors.New("privacy: invalid parameter")

// ErrNotFinite is wrapped when a computation would produce NaN or Inf as a
// privacy figure (an overflow regime). The package never returns a
// non-finite epsilon, delta or rho together with a nil error.
var ErrNotFinite = errors.New("privacy: result is not finite")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidParameter, fmt.Sprintf(format, args...))
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// checkDelta requires delta in the open interval (0, 1).
func checkDelta(delta float64) error {
	if !(delta > 0 && delta < 1) {
		return invalid("delta = %v, want 0 < delta < 1", delta)
	}
	return nil
}

// checkPositive requires a finite x > 0.
func checkPositive(name string, x float64) error {
	if !(x > 0) || math.IsInf(x, 0) {
		return invalid("%s = %v, want a finite value > 0", name, x)
	}
	return nil
}

// checkNonNegative requires a finite x >= 0.
func checkNonNegative(name string, x float64) error {
	if !(x >= 0) || math.IsInf(x, 0) {
		return invalid("%s = %v, want a finite value >= 0", name, x)
	}
	return nil
}

// checkRate requires a sampling rate q in (0, 1].
func checkRate(q float64) error {
	if !(q > 0 && q <= 1) {
		return invalid("sampling rate q = %v, want 0 < q <= 1", q)
	}
	return nil
}

// checkEpsilon requires a finite epsilon > 0.
func checkEpsilon(eps float64) error { return checkPositive("epsilon", eps) }

// result returns x, or an error wrapping ErrNotFinite if x is NaN or Inf.
func result(what string, x float64) (float64, error) {
	if !finite(x) {
		return 0, fmt.Errorf("%w: %s = %v", ErrNotFinite, what, x)
	}
	return x, nil
}

func errFirst(err error) error {
	if err == nil || errors.Is(err, ErrNotFinite) {
		return nil
	}
	return err
}

func errorsIsNotFinite(err error) bool { return errors.Is(err, ErrNotFinite) }
