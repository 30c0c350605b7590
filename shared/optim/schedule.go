package optim

import (
	"math/rand/v2"
	"slices"

	"browserfl/shared/dataset"
)

// SampleCohort returns k of ids drawn uniformly without replacement (a
// partial Fisher–Yates shuffle) by a PCG generator seeded with (seed,
// round), in the order drawn; ids is not modified. It is the one rule for
// choosing a round's cohort: the coordinator (over its sorted eligible
// device ids, so a cohort is reproducible from the logged seed) and the
// simulator call it. k is clamped to [0, len(ids)].
func SampleCohort[T any](ids []T, k int, seed uint64, round int) []T {
	k = max(0, min(k, len(ids)))
	rng := rand.New(rand.NewPCG(seed, uint64(round)))
	out := slices.Clone(ids)
	for i := 0; i < k; i++ {
		j := i + rng.IntN(len(out)-i)
		out[i], out[j] = out[j], out[i]
	}
	return out[:k]
}

// Minibatch fills dst with the len(dst) samples of data that follow
// cursor, in order, wrapping around the end of data. It is the one rule for
// choosing a device's minibatch, used by the device runtime (page and
// native) and the simulator: for single-pass algorithms (Params.SinglePass)
// the caller never lets cursor + len(dst) pass len(data), so no sample is
// used twice; the others go through their data in order, pass after pass
// (their accounting, algo.FreshSigma, charges every release in full whether or
// not a given sample is in it, so the order costs no privacy).
func Minibatch(dst, data []dataset.Sample, cursor int) {
	for i := range dst {
		dst[i] = data[(cursor+i)%len(data)]
	}
}

// NextCursor is the cursor after a minibatch of b samples was released:
// cursor + b, wrapped around n for multi-pass algorithms (single = false).
func NextCursor(cursor, b, n int, single bool) int {
	cursor += b
	if !single && n > 0 {
		cursor %= n
	}
	return cursor
}
