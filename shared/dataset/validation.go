package dataset

import "fmt"

// holdOutStream is HoldOut's PCG stream constant (the partitioners use
// others).
const holdOutStream = 0x686f6c646f7574 // "holdout"

// ValidationFraction is the share of a training set that ValidationSplit
// holds out: one sixth (10,000 of Fashion-MNIST's 60,000 training images,
// the size of its test set).
const ValidationFraction = 6

// validationSeed seeds the one validation split; it is fixed so that every
// tuning run (cmd/flsim -validate, cmd/flresults -tune) holds out the same
// samples, and distinct from every run seed's partition stream.
const validationSeed = 0x76616c6964 // "valid"

// ValidationSplit is the one validation split of the project: it holds
// out floor(n / ValidationFraction) samples of train, chosen by a seeded
// permutation (the same on every platform and every call), and returns
// the rest, in their original order, as the training part. Hyperparameters
// are chosen on the validation part of a model trained on the training
// part; the test set is read once per reported result, never to choose.
// The two parts share the feature slices with train and are disjoint.
func ValidationSplit(train Set) (fit, validation Set, err error) {
	return train.HoldOut(len(train.Samples)/ValidationFraction, validationSeed)
}

// HoldOut returns s without n samples chosen by a permutation seeded with
// seed (fit, in s's order) and those n samples (held, in the permutation's
// order). 0 < n < s.Len() is required.
func (s Set) HoldOut(n int, seed uint64) (fit, held Set, err error) {
	if n <= 0 || n >= len(s.Samples) {
		return Set{}, Set{}, fmt.Errorf("dataset: hold out %d of the %d samples of %q: want 0 < n < %d", n, len(s.Samples), s.Name, len(s.Samples))
	}
	perm := newRand(seed, holdOutStream).Perm(len(s.Samples))
	heldIdx := perm[:n]
	out := make([]bool, len(s.Samples))
	for _, i := range heldIdx {
		out[i] = true
	}
	fitIdx := make([]int, 0, len(s.Samples)-n)
	for i := range s.Samples {
		if !out[i] {
			fitIdx = append(fitIdx, i)
		}
	}
	if fit, err = s.Subset(fitIdx); err != nil {
		return Set{}, Set{}, err
	}
	if held, err = s.Subset(heldIdx); err != nil {
		return Set{}, Set{}, err
	}
	fit.Name, held.Name = s.Name+" (fit)", s.Name+" (validation)"
	return fit, held, nil
}
