package dataset

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// newRand returns the partitioners' deterministic generator: a PCG seeded
// with (seed, a per-scheme stream constant), so that IID, Shards and
// Dirichlet with the same seed do not share a stream.
func newRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream))
}

func checkDevices(n, m int) error {
	if m <= 0 {
		return fmt.Errorf("dataset: partition of %d samples across %d devices: need at least one device", n, m)
	}
	if m > n {
		return fmt.Errorf("dataset: partition of %d samples across %d devices: more devices than samples would leave some empty", n, m)
	}
	return nil
}

func checkLabels(labels []int) (classes int, err error) {
	for i, l := range labels {
		if l < 0 {
			return 0, fmt.Errorf("dataset: partition: label %d of sample %d is negative", l, i)
		}
		classes = max(classes, l+1)
	}
	return classes, nil
}

// IID splits the indices 0..n-1 uniformly at random across m devices of
// equal size: the first n mod m devices get one index more than the rest.
// It needs 1 <= m <= n.
func IID(n, m int, seed uint64) ([][]int, error) {
	if err := checkDevices(n, m); err != nil {
		return nil, err
	}
	perm := newRand(seed, 0x11d).Perm(n)
	return cutEven(perm, m), nil
}

// cutEven cuts xs into m contiguous runs whose lengths differ by at most
// one, longer runs first.
func cutEven(xs []int, m int) [][]int {
	out := make([][]int, m)
	q, r := len(xs)/m, len(xs)%m
	at := 0
	for j := range out {
		size := q
		if j < r {
			size++
		}
		out[j] = slices.Clip(xs[at : at+size])
		at += size
	}
	return out
}

// Shards is the label-skewed split of McMahan et al. (FedAvg, 2017): sort
// the indices by label (ties in random order), cut them into m*k shards of
// equal size (differing by at most one) and give each device k shards
// chosen at random. With k = 2 and 10 balanced classes most devices see
// only two labels. It needs k >= 1 and 1 <= m*k <= n; labels must be
// non-negative.
func Shards(labels []int, m, k int, seed uint64) ([][]int, error) {
	n := len(labels)
	if _, err := checkLabels(labels); err != nil {
		return nil, err
	}
	if err := checkDevices(n, m); err != nil {
		return nil, err
	}
	if k <= 0 {
		return nil, fmt.Errorf("dataset: shard partition: %d shards per device, want >= 1", k)
	}
	if m > n/k {
		return nil, fmt.Errorf("dataset: shard partition: %d devices x %d shards exceeds %d samples", m, k, n)
	}
	rng := newRand(seed, 0x5a4d)
	idx := rng.Perm(n)
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(labels[a], labels[b]) })
	shards := cutEven(idx, m*k)
	order := rng.Perm(m * k)
	out := make([][]int, m)
	for j := range out {
		for _, s := range order[j*k : (j+1)*k] {
			out[j] = append(out[j], shards[s]...)
		}
	}
	shuffleEach(out, rng)
	return out, nil
}

// shuffleEach puts every device's indices in random order, so that a
// device reading its data in order (single pass) does not see one class
// after another: the skew of a partition is across devices, not in time.
func shuffleEach(parts [][]int, rng *rand.Rand) {
	for _, p := range parts {
		rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
	}
}

// Dirichlet is the non-IID split of Hsu, Qi and Brown (2019): for every
// class independently, draw proportions p ~ Dirichlet(alpha, ..., alpha)
// over the m devices and give device j a share p_j of that class's samples
// (chosen at random; counts are floor(p_j n_c) plus the remainder to the
// largest fractional parts, so every sample is used exactly once). Small
// alpha concentrates each class on few devices; large alpha tends to IID.
//
// No device is left empty: while some device has no sample, it takes one
// random sample from the device that holds the most (which has at least
// two because m <= n). This moves at most m-1 samples, so it barely
// changes the label skew, and it never loops. Device sizes are otherwise
// unequal, as Dirichlet proportions make them. It needs alpha > 0 (finite)
// and 1 <= m <= n; labels must be non-negative.
func Dirichlet(labels []int, m int, alpha float64, seed uint64) ([][]int, error) {
	n := len(labels)
	classes, err := checkLabels(labels)
	if err != nil {
		return nil, err
	}
	if err := checkDevices(n, m); err != nil {
		return nil, err
	}
	if !(alpha > 0) || math.IsInf(alpha, 1) {
		return nil, fmt.Errorf("dataset: Dirichlet partition: alpha = %v, want a finite alpha > 0", alpha)
	}
	rng := newRand(seed, 0xd1c)
	byClass := make([][]int, classes)
	for _, i := range rng.Perm(n) {
		byClass[labels[i]] = append(byClass[labels[i]], i)
	}
	out := make([][]int, m)
	p := make([]float64, m)
	counts := make([]int, m)
	frac := make([]float64, m)
	order := make([]int, m)
	for _, members := range byClass {
		if len(members) == 0 {
			continue
		}
		dirichletTo(p, alpha, rng)
		nc := len(members)
		left := nc
		for j, pj := range p {
			x := pj * float64(nc)
			counts[j] = int(math.Floor(x))
			frac[j] = x - float64(counts[j])
			left -= counts[j]
			order[j] = j
		}
		// Floating rounding can leave left in [0, m]; hand it out by
		// largest fractional part (ties to the lower device).
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(frac[b], frac[a]) })
		for t := 0; left > 0; t = (t + 1) % m {
			counts[order[t]]++
			left--
		}
		at := 0
		for j, c := range counts {
			out[j] = append(out[j], members[at:at+c]...)
			at += c
		}
	}
	for j := range out {
		if len(out[j]) > 0 {
			continue
		}
		big := 0
		for i := range out {
			if len(out[i]) > len(out[big]) {
				big = i
			}
		}
		t := rng.IntN(len(out[big]))
		out[j] = append(out[j], out[big][t])
		out[big] = slices.Delete(out[big], t, t+1)
	}
	shuffleEach(out, rng)
	return out, nil
}

// dirichletTo fills dst with a draw from the symmetric Dirichlet(alpha)
// distribution: normalised independent Gamma(alpha, 1) draws. The gammas
// are kept as logarithms so that small alpha (where Gamma(alpha) draws
// underflow float64, e.g. alpha = 0.01 gives values like 1e-300) still
// yields proportions that sum to one.
func dirichletTo(dst []float64, alpha float64, rng *rand.Rand) {
	top := math.Inf(-1)
	for j := range dst {
		dst[j] = logGamma(alpha, rng)
		top = max(top, dst[j])
	}
	sum := 0.0
	for j := range dst {
		dst[j] = math.Exp(dst[j] - top)
		sum += dst[j]
	}
	for j := range dst {
		dst[j] /= sum
	}
}

// logGamma returns log X for X ~ Gamma(alpha, 1), by Marsaglia and Tsang
// (2000, "A simple method for generating gamma variables"), with their
// boost for alpha < 1: X = Gamma(alpha+1) * U^(1/alpha), taken in logs.
func logGamma(alpha float64, rng *rand.Rand) float64 {
	boost := 0.0
	if alpha < 1 {
		// 1 - Float64() lies in (0, 1], so the log is finite.
		boost = math.Log(1-rng.Float64()) / alpha
		alpha++
	}
	d := alpha - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		z := rng.NormFloat64()
		v := 1 + c*z
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := 1 - rng.Float64()
		if math.Log(u) < 0.5*z*z+d-d*v+d*math.Log(v) {
			return math.Log(d*v) + boost
		}
	}
}

// MeanLabelEntropy returns the mean over devices of the entropy, in bits,
// of each device's label distribution: log2(classes) when every device is
// balanced, 0 when every device holds one label. It measures label skew;
// an empty device counts as 0. Negative labels and indices outside labels
// are errors.
func MeanLabelEntropy(labels []int, parts [][]int) (float64, error) {
	if len(parts) == 0 {
		return 0, fmt.Errorf("dataset: label entropy of no devices")
	}
	classes, err := checkLabels(labels)
	if err != nil {
		return 0, err
	}
	count := make([]int, classes)
	total := 0.0
	for j, part := range parts {
		clear(count)
		for _, i := range part {
			if i < 0 || i >= len(labels) {
				return 0, fmt.Errorf("dataset: label entropy: device %d has index %d outside [0, %d)", j, i, len(labels))
			}
			count[labels[i]]++
		}
		h := 0.0
		for _, c := range count {
			if c > 0 {
				q := float64(c) / float64(len(part))
				h -= q * math.Log2(q)
			}
		}
		total += h
	}
	return total / float64(len(parts)), nil
}
