// Package model holds the differentiable models the product trains, with
// per-sample gradients: multinomial logistic regression (the papers' model,
// d = 10 x 785 = 7,850 for 784 features and 10 classes) and the
// one-hidden-layer sigmoid network of SoteriaFL sec. 6.2 (784-64-10,
// d = 50,890).
//
// Invariants:
//
//   - Parameters are a flat []float64 of length Dim(); the layout of each
//     model is documented on its constructor and never changes for a given
//     Name(), so a vector is meaningful across the coordinator, the simulator
//     and every device.
//   - Loss, Grad, GradDiff and Predict compute the same forward pass: the
//     loss returned by Grad equals Loss, and Predict is the class of smallest
//     loss (ties to the smallest index).
//   - Losses use a numerically stable log-sum-exp: whenever the logits are
//     finite (for finite parameters and features, unless a logit overflows
//     float64 itself) the loss and the gradient are finite however large
//     the logits are, and the loss of a confidently correct prediction is
//     accurate down to the underflow threshold (it is log1p of the other
//     classes' mass, not a difference of nearly equal numbers).
//   - All sums accumulate in float64, whatever the float32 features.
//   - Nothing allocates in the per-sample path once a model is built. Scratch
//     space lives in the model value, so a Model is not safe for concurrent
//     use; build one per goroutine with Clone.
//   - A gradient destination dst may alias a parameter vector of the same
//     call (parameters are read in full before dst is written), so an
//     in-place w = grad f(w) is safe.
//   - Shapes are preconditions: Loss, Grad, GradDiff and Predict panic (with
//     a message starting "model:") on a parameter vector of the wrong length
//     or a sample whose features or label do not fit the model. Anything
//     that came from outside the program (a file, the network) must first
//     pass CheckParams and CheckSample, which return errors instead.
//
// Samples are often sparse (MNIST images are about 19% non-zero,
// Fashion-MNIST about 50%). When at most half the features of a sample are
// non-zero the models skip the zero ones, which is exact for finite
// parameters: a zero feature contributes nothing to a logit and a zero
// gradient entry to its weights. The two paths sum in different orders, so
// they agree to rounding, not bit for bit; each sample always takes the
// same path, so results are reproducible.
package model
