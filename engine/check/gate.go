package check

import (
	"fmt"

	"browserfl/shared/optim/plausible"
)

// Gate is the server's test of one decoded message against its sender's
// history: plausible.Checker in the product, NormOnly for research runs that
// measure what the other tests buy.
type Gate interface {
	Check(x []float64, norm float64, h *plausible.History) error
	NormBound() float64
}

var _ Gate = (*plausible.Checker)(nil)

// NormOnly is the L2 norm bound alone (the server before plausible.Checker).
type NormOnly float64

// Check refuses a message whose norm is above the bound (or not a number).
func (g NormOnly) Check(_ []float64, norm float64, _ *plausible.History) error {
	if !(norm <= float64(g)) {
		return fmt.Errorf("%w: norm %.4g above %.4g", plausible.ErrImplausible, norm, float64(g))
	}
	return nil
}

// NormBound is the bound.
func (g NormOnly) NormBound() float64 { return float64(g) }
