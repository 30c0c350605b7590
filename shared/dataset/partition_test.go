package dataset

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// balancedLabels returns n labels cycling through classes 0..classes-1.
func balancedLabels(n, classes int) []int {
	l := make([]int, n)
	for i := range l {
		l[i] = i % classes
	}
	return l
}

// checkPartition fails unless parts has m non-empty lists that together
// use every index in [0, n) exactly once.
func checkPartition(t *testing.T, parts [][]int, n, m int) {
	t.Helper()
	if len(parts) != m {
		t.Fatalf("%d devices, want %d", len(parts), m)
	}
	seen := make([]bool, n)
	total := 0
	for j, p := range parts {
		if len(p) == 0 {
			t.Errorf("device %d is empty", j)
		}
		for _, i := range p {
			if i < 0 || i >= n {
				t.Fatalf("device %d has index %d outside [0, %d)", j, i, n)
			}
			if seen[i] {
				t.Fatalf("index %d used twice", i)
			}
			seen[i] = true
		}
		total += len(p)
	}
	if total != n {
		t.Errorf("%d indices used, want %d", total, n)
	}
}

func sizeRange(parts [][]int) (lo, hi int) {
	lo = math.MaxInt
	for _, p := range parts {
		lo, hi = min(lo, len(p)), max(hi, len(p))
	}
	return lo, hi
}

func TestIID(t *testing.T) {
	for _, tc := range []struct{ n, m int }{{1, 1}, {10, 10}, {10, 3}, {1000, 7}, {60000, 100}} {
		t.Run(fmt.Sprintf("n=%d,m=%d", tc.n, tc.m), func(t *testing.T) {
			parts, err := IID(tc.n, tc.m, 42)
			if err != nil {
				t.Fatal(err)
			}
			checkPartition(t, parts, tc.n, tc.m)
			if lo, hi := sizeRange(parts); lo != tc.n/tc.m || hi-lo > 1 {
				t.Errorf("sizes in [%d, %d], want %d or %d", lo, hi, tc.n/tc.m, tc.n/tc.m+1)
			}
		})
	}
}

func TestShards(t *testing.T) {
	for _, tc := range []struct{ n, m, k int }{{10, 5, 2}, {1000, 10, 2}, {1003, 7, 3}, {60000, 100, 2}, {5, 5, 1}} {
		t.Run(fmt.Sprintf("n=%d,m=%d,k=%d", tc.n, tc.m, tc.k), func(t *testing.T) {
			labels := balancedLabels(tc.n, 10)
			parts, err := Shards(labels, tc.m, tc.k, 42)
			if err != nil {
				t.Fatal(err)
			}
			checkPartition(t, parts, tc.n, tc.m)
			// k shards each of n/(mk) or one more.
			shard := tc.n / (tc.m * tc.k)
			if lo, hi := sizeRange(parts); lo < tc.k*shard || hi > tc.k*(shard+1) {
				t.Errorf("sizes in [%d, %d], want within [%d, %d]", lo, hi, tc.k*shard, tc.k*(shard+1))
			}
		})
	}
}

// TestShardsSkew: 10 classes of 100 cut into 20 shards of 50 puts one
// label in every shard, so every device of 2 shards holds at most 2
// labels, and its label entropy is at most 1 bit. This is exact, not
// statistical.
func TestShardsSkew(t *testing.T) {
	labels := balancedLabels(1000, 10)
	for seed := range uint64(5) {
		parts, err := Shards(labels, 10, 2, seed)
		if err != nil {
			t.Fatal(err)
		}
		for j, p := range parts {
			var ls []int
			for _, i := range p {
				ls = append(ls, labels[i])
			}
			slices.Sort(ls)
			if k := len(slices.Compact(ls)); k > 2 {
				t.Errorf("seed %d: device %d holds %d labels, want <= 2", seed, j, k)
			}
		}
		if h, err := MeanLabelEntropy(labels, parts); err != nil || h > 1 {
			t.Errorf("seed %d: mean label entropy %v (%v), want <= 1 bit", seed, h, err)
		}
	}
}

func TestDirichlet(t *testing.T) {
	for _, tc := range []struct {
		n, m  int
		alpha float64
	}{{1000, 10, 0.5}, {1000, 10, 1e-3}, {10, 10, 0.01}, {11, 10, 0.01}, {60000, 100, 0.1}, {500, 7, 1e6}, {3, 1, 1}} {
		t.Run(fmt.Sprintf("n=%d,m=%d,alpha=%g", tc.n, tc.m, tc.alpha), func(t *testing.T) {
			labels := balancedLabels(tc.n, 10)
			for seed := range uint64(3) {
				parts, err := Dirichlet(labels, tc.m, tc.alpha, seed)
				if err != nil {
					t.Fatal(err)
				}
				checkPartition(t, parts, tc.n, tc.m)
			}
		})
	}
}

// TestDirichletSkew checks that label skew grows as alpha shrinks: the
// mean per-device label entropy decreases strictly from alpha = 100 to 1,
// 0.1 and 0.01 (10,000 balanced labels, 10 classes, 20 devices).
//
// Tolerance: over 300 seeds (0..299) the entropy of one partition had
// mean/sd 3.316/0.0006, 2.813/0.046, 1.274/0.132 and 0.209/0.072 bits for
// the four alphas. The smallest gap between neighbours (0.1 vs 0.01) is
// 1.06 bits, 7 sd of the difference of two partitions; averaging 4 seeds
// halves the sd, so the gap is 14 sd: a wrong order has probability below
// 1e-40 under the normal approximation and below 1/(1+14^2) = 0.5% by
// Cantelli's inequality, which assumes nothing about the distribution.
func TestDirichletSkew(t *testing.T) {
	labels := balancedLabels(10000, 10)
	prev := math.Inf(1)
	for _, alpha := range []float64{100, 1, 0.1, 0.01} {
		h := 0.0
		for seed := range uint64(4) {
			parts, err := Dirichlet(labels, 20, alpha, 1000+seed)
			if err != nil {
				t.Fatal(err)
			}
			e, err := MeanLabelEntropy(labels, parts)
			if err != nil {
				t.Fatal(err)
			}
			h += e / 4
		}
		t.Logf("alpha %g: mean label entropy %.3f bits", alpha, h)
		if h >= prev {
			t.Errorf("alpha %g: entropy %.3f, not below %.3f of the larger alpha", alpha, h, prev)
		}
		prev = h
	}
}

// TestIIDEntropy: an IID device of 500 balanced labels has entropy close
// to log2(10) = 3.32 bits; the plug-in estimate is biased low by about
// (K-1)/(2 n ln 2) = 9/(2*500*0.693) = 0.013 bits (Miller-Madow), so we
// allow 0.05, about four times the bias.
func TestIIDEntropy(t *testing.T) {
	labels := balancedLabels(10000, 10)
	parts, err := IID(len(labels), 20, 7)
	if err != nil {
		t.Fatal(err)
	}
	h, err := MeanLabelEntropy(labels, parts)
	if err != nil {
		t.Fatal(err)
	}
	if h < math.Log2(10)-0.05 || h > math.Log2(10) {
		t.Errorf("IID mean label entropy %.4f, want within 0.05 below %.4f", h, math.Log2(10))
	}
}

func TestPartitionDeterminism(t *testing.T) {
	labels := balancedLabels(2000, 10)
	schemes := []struct {
		name string
		f    func(seed uint64) ([][]int, error)
	}{
		{"iid", func(s uint64) ([][]int, error) { return IID(len(labels), 13, s) }},
		{"shards", func(s uint64) ([][]int, error) { return Shards(labels, 13, 2, s) }},
		{"dirichlet", func(s uint64) ([][]int, error) { return Dirichlet(labels, 13, 0.3, s) }},
	}
	for _, sc := range schemes {
		t.Run(sc.name, func(t *testing.T) {
			a, err := sc.f(5)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := sc.f(5)
			c, _ := sc.f(6)
			if !slices.EqualFunc(a, b, slices.Equal) {
				t.Error("same seed, different partitions")
			}
			// Two seeds giving the same partition of 2,000 indices would
			// need a PCG collision; it does not happen.
			if slices.EqualFunc(a, c, slices.Equal) {
				t.Error("seeds 5 and 6 gave the same partition")
			}
		})
	}
}

func TestPartitionErrors(t *testing.T) {
	labels := balancedLabels(10, 3)
	tests := []struct {
		name string
		f    func() ([][]int, error)
		want string
	}{
		{"iid m=0", func() ([][]int, error) { return IID(10, 0, 1) }, "at least one device"},
		{"iid m<0", func() ([][]int, error) { return IID(10, -2, 1) }, "at least one device"},
		{"iid m>n", func() ([][]int, error) { return IID(10, 11, 1) }, "more devices than samples"},
		{"iid n=0", func() ([][]int, error) { return IID(0, 1, 1) }, "more devices than samples"},
		{"shards k=0", func() ([][]int, error) { return Shards(labels, 2, 0, 1) }, "shards per device"},
		{"shards m*k>n", func() ([][]int, error) { return Shards(labels, 4, 3, 1) }, "exceeds 10 samples"},
		{"shards m>n", func() ([][]int, error) { return Shards(labels, 11, 1, 1) }, "more devices"},
		{"shards negative label", func() ([][]int, error) { return Shards([]int{0, -1}, 1, 1, 1) }, "negative"},
		{"dirichlet alpha=0", func() ([][]int, error) { return Dirichlet(labels, 2, 0, 1) }, "alpha"},
		{"dirichlet alpha<0", func() ([][]int, error) { return Dirichlet(labels, 2, -1, 1) }, "alpha"},
		{"dirichlet alpha=NaN", func() ([][]int, error) { return Dirichlet(labels, 2, math.NaN(), 1) }, "alpha"},
		{"dirichlet alpha=Inf", func() ([][]int, error) { return Dirichlet(labels, 2, math.Inf(1), 1) }, "alpha"},
		{"dirichlet m=0", func() ([][]int, error) { return Dirichlet(labels, 0, 1, 1) }, "at least one device"},
		{"dirichlet m>n", func() ([][]int, error) { return Dirichlet(labels, 11, 1, 1) }, "more devices"},
		{"dirichlet negative label", func() ([][]int, error) { return Dirichlet([]int{-3}, 1, 1, 1) }, "negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.f()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("= %v, %v; want an error containing %q", p, err, tc.want)
			}
		})
	}
	if _, err := MeanLabelEntropy(labels, [][]int{{10}}); err == nil {
		t.Error("MeanLabelEntropy with index 10 of 10: no error")
	}
	if _, err := MeanLabelEntropy(labels, nil); err == nil {
		t.Error("MeanLabelEntropy of no devices: no error")
	}
}

// TestLogGamma checks the Gamma(alpha, 1) sampler behind Dirichlet: the
// mean of n = 20,000 draws is within 5 sigma/sqrt(n) of alpha, where
// sigma^2 = Var = alpha. By the central limit theorem a correct sampler
// fails with probability about 6e-7 per alpha.
func TestLogGamma(t *testing.T) {
	const n = 20000
	for _, alpha := range []float64{0.05, 0.5, 1, 2.5, 30} {
		rng := newRand(99, uint64(alpha*1000))
		sum := 0.0
		for range n {
			sum += math.Exp(logGamma(alpha, rng))
		}
		mean := sum / n
		if tol := 5 * math.Sqrt(alpha/n); math.Abs(mean-alpha) > tol {
			t.Errorf("alpha %g: mean %.5f, want within %.5f of %g", alpha, mean, tol, alpha)
		}
	}
}

func BenchmarkDirichlet(b *testing.B) {
	labels := balancedLabels(60000, 10)
	for b.Loop() {
		if _, err := Dirichlet(labels, 100, 0.1, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPartitionsAreNotInLabelOrder checks that a device reading its part
// in order does not see one class after another: in label order a part
// changes label at most classes-1 times; shuffled, a part of n samples
// over several classes changes label about n(1 - sum p_c^2) times. The
// threshold (more than 4 x classes changes in a part of >= 100 samples
// with >= 2 classes) is far from both; fixed seeds make it exact.
func TestPartitionsAreNotInLabelOrder(t *testing.T) {
	labels := make([]int, 6000)
	for i := range labels {
		labels[i] = i % 10
	}
	shards, err := Shards(labels, 20, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := Dirichlet(labels, 20, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	for name, parts := range map[string][][]int{"shards": shards, "dirichlet": dir} {
		for d, p := range parts {
			seen := map[int]bool{}
			changes := 0
			for i, k := range p {
				seen[labels[k]] = true
				if i > 0 && labels[k] != labels[p[i-1]] {
					changes++
				}
			}
			if len(p) >= 100 && len(seen) >= 2 && changes <= 4*10 {
				t.Errorf("%s device %d: %d samples of %d classes change label only %d times (label order?)", name, d, len(p), len(seen), changes)
			}
		}
	}
}
