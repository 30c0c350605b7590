// Package algo describes every training algorithm by the session's
// public parameters alone, before any server or device exists: the
// registry (Names, Lookup, and each Algorithm's Kind: the server's step,
// who adds the noise, the device's estimator), the parameters' validity
// for an algorithm (Validate), and every privacy calibration a device,
// the trusted server, the planner and the server's tests of a message
// derive from them (DESIGN principle 2): the budget (ZCDPBudget), the
// sensitivities (Sensitivity, TrustedSensitivity, LocalReleaseSensitivity),
// the noise scales (NCSigma and NC, TrustedSigma, FreshSigma, NoiseScale),
// the shared-noise shares and promise (ShareScale, FloorFactor,
// SharedPromiseTV) and output perturbation's mode, charge and
// floating-point allowance (LocalOutputPerturbation, LocalCharge,
// LocalFloatSlack). Each rule has its one home here, which every caller
// uses. It holds no state and runs nothing: shared/optim builds each
// algorithm's server and device halves from it.
//
// # Neighbouring relation and sensitivity
//
// Neighbouring local datasets differ by replacing one sample
// (replace-one). Every per-sample quantity a device computes (the mu^2
// correction s = t grad f(x_t; z) - (t-1) grad f(x_{t-1}; z), or a
// gradient) is checked finite and clipped to S = Params.S() by
// construction, whatever the model returns; a minibatch averages exactly b
// clipped quantities (the device's Prepare refuses any other batch size), so one
// replaced sample moves the average by at most 2S/b. In "nc" a device's
// released partial sum sum_k s_k + y_N therefore has sensitivity 2S/b and
// the N-th participation costs (2S/b)^2 / (2 sigma_N^2) =
// rho_p^2 / (2 H_K N) zCDP (noise-cancellation paper, Theorem 5.1 and
// 5.2, with the harmonic number H_K of the release cap K for its
// 1 + ln T; Bun–Steinke Prop. 1.6 and Lemma 2.3): exactly rho_p^2/2 over
// the N <= K participations a device may make (NCSigma). This analysis (and that of "trusted") needs each
// sample to enter at most one round (single pass, as in the papers): a
// reused sample would move several corrections inside one partial sum. The
// runtime's data cursor enforces it; the device cannot tell samples apart.
// The fresh-noise algorithms charge every release its full worst-case
// sensitivity, so they may reuse samples.
package algo
