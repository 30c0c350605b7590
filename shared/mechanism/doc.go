// Package mechanism holds the privacy and communication building blocks that
// every algorithm in shared/optim composes: L2 clipping, discrete Gaussian
// noise on a grid from a cryptographic source, the regenerable noise state
// of noise cancellation,
// and the compressors with their wire encoding.
//
// # Invariants
//
//   - Clip(v, S) leaves ||v||_2 <= S for every finite v; CheckFinite rejects
//     NaN and ±Inf naming the first bad index. Sensitivity therefore holds
//     by construction, whatever the model computes, as long as the caller
//     checks finiteness before clipping (Clip of a NaN vector is NaN).
//   - Noise comes from a [Stream]: math/rand/v2's ChaCha8 generator (the
//     C2SP chacha8rand construction) keyed by HMAC-SHA256 of a 32-byte
//     seed and the stream's purpose. In the product the
//     key is read from crypto/rand (crypto.getRandomValues in the browser)
//     for every release, so the noise is as unpredictable as the CSPRNG; the
//     simulator passes a deterministic seed stream instead. Because the
//     keystream is a deterministic function of the key, a device can store
//     a 32-byte seed in place of a d-dimensional noise vector and regenerate
//     the vector bit for bit, on every platform (the generator and the sampler
//     use integers only). Nothing here uses
//     math/rand's non-cryptographic generators.
//   - What a device of a private session releases is computed in integers
//     (discrete.go): its clipped estimate rounded onto a power-of-two grid
//     fixed by public parameters ([GridStep], [ToGrid]) plus an exact
//     discrete Gaussian ([Stream.DiscreteGaussian]: an exact rejection
//     sampler from a sigma-independent block table, with no floating
//     point in any probability; privacy.md 4a), whose integer sigma is calibrated to the grid
//     sensitivity Delta/step + sqrt(d) ([DiscreteSigma]), so the zCDP
//     Delta^2/(2 sigma^2) a ledger charges for the continuous calibration
//     is an upper bound by construction (CKS 2020, Theorem 14), and so is
//     its Gaussian-DP mu^2/2 through the rounded-Gaussian coupling
//     (privacy.LedgerDelta: sigma^2 - 1/12 in place of sigma^2, sigma >= 64
//     grid units, a total-variation term of at most kappa rho). The payload
//     is step times that integer vector: no floating-point structure of a
//     sampler can reveal the estimate (Mironov 2012). Only the package's
//     own compressors, which are post-processing, are accepted for such a
//     release ([PostProcessing]).
//   - Continuous standard normals ([Stream.FillNormal], [NoiseVector]) are
//     drawn by the 128-layer ziggurat method (Marsaglia and Tsang 2000)
//     with independent layer and value bits (Doornik 2005), 32 keystream
//     bits per draw on the fast path; see ziggurat.go. Their outputs lie on
//     a sparse lattice, so they serve only where that reveals nothing
//     private: the trusted server's noise, the simulator's synthetic data
//     and tests. No device release uses them.
//   - Compressors are post-processing of an already privatised vector and
//     cost no privacy. Every compressor returns, next to its payload, the
//     exact float64 vector that [Decode] will produce from it, so device
//     and server agree bit for bit on what was sent (this is what makes the
//     noise-cancellation and error-feedback identities exact).
//   - The wire format is self-describing (kind byte, dimension, data; see
//     codec.go). [Decode] validates everything, never panics on hostile
//     bytes and rejects NaN/Inf; [Size] of a compressor is exact.
//
// # Compressors and omega
//
// A compressor C is an omega-compressor (SoteriaFL, Definition 1) when
// E[C(x)] = x and E||C(x) - x||^2 <= omega ||x||^2. Random-k
// sparsification has omega = d/k - 1 (SoteriaFL, Example 1); random
// quantization with s levels has omega = min(d/s^2, sqrt(d)/s) (Alistarh et
// al. 2017, QSGD, Lemma 3.1, cited by SoteriaFL). Top-k is biased (its
// Omega is +Inf) and is meant to be used under error feedback.
package mechanism
