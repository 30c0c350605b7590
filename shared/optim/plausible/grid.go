package plausible

import (
	"fmt"
	"math"

	"browserfl/shared/optim"
)

// SharedGrid returns, for a "shared" session of model dimension d, the
// grid step of every release (the released vector is step times an
// integer vector, GridReleaser) and the largest |integer| any coordinate
// of an honest release reaches, maxAbs: ceil(E/step + 1/2 + s zc), with E
// the bound on the estimate's norm, 1/2 the grid rounding and s zc the
// Checker's coordinate quantile of the noise (the new share minus the
// cancelled one, at the release cap), so an honest device's release
// exceeds it with probability at most UpdateRejectProb over the whole
// session (docs/security.md). Secure aggregation sizes its ring from it
// (plan.SessionSecAgg); a release beyond it is refused by the device's
// secure aggregation client, never wrapped.
func SharedGrid(p optim.Params, d int) (step float64, maxAbs int64, err error) {
	if p.Algorithm != "shared" {
		return 0, 0, fmt.Errorf("optim: grid of %q: only \"shared\" is summed in integers", p.Algorithm)
	}
	c, err := NewChecker(p, d)
	if err != nil {
		return 0, 0, err
	}
	if !c.shape {
		return 0, 0, fmt.Errorf("optim: \"shared\" needs a dense compressor, not %q (%s)", p.Compressor, c.why)
	}
	lim := math.Ceil(c.e/c.step + 0.5 + c.s/c.step*c.zc)
	if !(lim >= 1 && lim < 1<<62) {
		return 0, 0, fmt.Errorf("optim: \"shared\" coordinate bound %g grid units", lim)
	}
	return c.step, int64(lim), nil
}
