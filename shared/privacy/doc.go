// Package privacy is the product's privacy accounting: a per-device zCDP
// ledger read with exact Gaussian DP (SpentEpsilon, the one reading of a
// ledger, and LedgerRho: the device's discrete Gaussian releases reach
// the Gaussian-DP theorem through a rounded-Gaussian coupling,
// discrete.go; a ledger holding a last-iterate charge is read by Gaussian
// DP plus its actual total-variation term only, spent.go), conversions between
// zCDP, Rényi DP, Gaussian DP and (epsilon, delta)-DP, an RDP accountant for the Poisson-subsampled Gaussian
// mechanism, the last-iterate bound for cyclic DP-SGD and the a-priori
// calibration of noise from a target budget.
//
// Units and conventions (invariants of every exported function):
//
//   - rho is always standard Bun–Steinke zCDP: a mechanism is rho-zCDP when
//     D_alpha(M(x) || M(x')) <= alpha*rho for all alpha > 1 and neighbours
//     x, x'. The noise-cancellation and full-participation papers write
//     "rho^2/2-zCDP" with their own rho; convert with ZCDPFromPaperRho and
//     PaperRhoFromZCDP, nowhere else.
//   - Sensitivities are L2 sensitivities under the neighbouring relation
//     stated by the caller. The product's device releases (noise formulas
//     in shared/optim, per-session report in the plan subpackage) use
//     replace-one neighbours: one sample of one device replaced, so a
//     minibatch mean of b corrections clipped to norm S moves by at most
//     2S/b. The subsampled-Gaussian accountant uses add/remove-one
//     neighbours with Poisson sampling, as in Mironov, Talwar and Zhang
//     (2019), with sensitivity 1 and noise multiplier sigma. The
//     last-iterate bound (LastIterate) uses swap (replace-one) neighbours.
//     The proactive calibration uses add/remove with probabilistic
//     sampling, as its paper does.
//   - Every function returning a privacy figure returns either a finite
//     value and a nil error, or an error; never NaN or Inf with nil. Bad
//     parameters wrap ErrInvalidParameter; overflow regimes wrap
//     ErrNotFinite.
//   - Conversions to (epsilon, delta) only ever return an epsilon that is a
//     valid bound: numerical optimisation over orders can lose tightness,
//     never validity, because every candidate is evaluated exactly.
//
// The package is pure Go with no I/O and builds for js/wasm.
package privacy
