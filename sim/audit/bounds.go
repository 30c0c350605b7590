package audit

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mathext"
)

// ClopperPearsonUpper is the one-sided Clopper-Pearson upper confidence
// bound on a binomial rate from k successes in n trials: the p with
// P[Bin(n, p) <= k] = alpha, so the true rate is below it with probability
// at least 1 - alpha. It is 1 when k = n.
func ClopperPearsonUpper(k, n int, alpha float64) (float64, error) {
	if err := checkCount(k, n, alpha); err != nil {
		return 0, err
	}
	if k == n {
		return 1, nil
	}
	return mathext.InvRegIncBeta(float64(k+1), float64(n-k), 1-alpha), nil
}

// ClopperPearsonLower is the one-sided Clopper-Pearson lower confidence
// bound: the p with P[Bin(n, p) >= k] = alpha (0 when k = 0).
func ClopperPearsonLower(k, n int, alpha float64) (float64, error) {
	if err := checkCount(k, n, alpha); err != nil {
		return 0, err
	}
	if k == 0 {
		return 0, nil
	}
	return mathext.InvRegIncBeta(float64(k), float64(n-k+1), alpha), nil
}

func checkCount(k, n int, alpha float64) error {
	if n < 1 || k < 0 || k > n {
		return fmt.Errorf("audit: %d successes in %d trials", k, n)
	}
	if !(alpha > 0 && alpha < 1) {
		return fmt.Errorf("audit: confidence failure alpha = %v, want 0 < alpha < 1", alpha)
	}
	return nil
}

// Counts are the outcomes of a membership test over a set of trials:
// Neg trials without the canary (FP of them guessed "canary") and Pos
// trials with it (FN of them guessed "no canary").
type Counts struct {
	Neg, FP int
	Pos, FN int
}

// Bound is an empirical lower bound on epsilon from Counts.
type Bound struct {
	Counts
	// FPRHi and FNRHi are the Clopper-Pearson upper bounds on the false
	// positive and false negative rates, each at one-sided level
	// 1 - Alpha/2, so both hold together with probability >= 1 - Alpha
	// (union bound).
	FPRHi, FNRHi float64
	Alpha        float64
	// Epsilon is max(ln((1-delta-FNRHi)/FPRHi), ln((1-delta-FPRHi)/FNRHi), 0).
	Epsilon float64
}

// EpsilonLowerBound turns the outcomes of a threshold test into a lower
// bound on the epsilon of any (epsilon, delta)-DP mechanism that produced
// them: a mechanism that is (epsilon, delta)-DP has, for every test,
// FPR + e^epsilon FNR >= 1 - delta and FNR + e^epsilon FPR >= 1 - delta
// (Kairouz, Oh and Viswanath 2015), so with the true rates below their
// upper bounds (probability >= 1 - alpha),
//
//	epsilon >= max(ln((1 - delta - FNR_hi) / FPR_hi), ln((1 - delta - FPR_hi) / FNR_hi)).
//
// A negative or undefined value is reported as 0 (no evidence).
func EpsilonLowerBound(c Counts, delta, alpha float64) (Bound, error) {
	if !(delta >= 0 && delta < 1) {
		return Bound{}, fmt.Errorf("audit: delta = %v, want 0 <= delta < 1", delta)
	}
	b := Bound{Counts: c, Alpha: alpha}
	var err error
	if b.FPRHi, err = ClopperPearsonUpper(c.FP, c.Neg, alpha/2); err != nil {
		return Bound{}, fmt.Errorf("false positives: %w", err)
	}
	if b.FNRHi, err = ClopperPearsonUpper(c.FN, c.Pos, alpha/2); err != nil {
		return Bound{}, fmt.Errorf("false negatives: %w", err)
	}
	b.Epsilon = max(0, logRatio(1-delta-b.FNRHi, b.FPRHi), logRatio(1-delta-b.FPRHi, b.FNRHi))
	return b, nil
}

// logRatio is ln(num/den), or 0 when the ratio is not a positive finite
// number (no evidence).
func logRatio(num, den float64) float64 {
	if !(num > 0) || !(den > 0) {
		return 0
	}
	return math.Log(num / den)
}

// Outcome is one trial: the auditor's statistic and whether the canary
// was in the device's data.
type Outcome struct {
	Stat   float64
	Canary bool
}

// CountAt counts the outcomes of the test "guess canary when Stat >
// threshold".
func CountAt(out []Outcome, threshold float64) Counts {
	var c Counts
	for _, o := range out {
		guess := o.Stat > threshold
		if o.Canary {
			c.Pos++
			if !guess {
				c.FN++
			}
		} else {
			c.Neg++
			if guess {
				c.FP++
			}
		}
	}
	return c
}

// maxCandidates bounds the thresholds SelectThreshold tries.
const maxCandidates = 4000

// SelectThreshold chooses the threshold of the test "guess canary when
// Stat > threshold" on selection trials, for a later evaluation on
// evalNeg and evalPos fresh trials: among up to maxCandidates observed
// statistics (evenly spaced in rank), the one whose selection rates,
// scaled to the evaluation sizes, give the largest EpsilonLowerBound.
// The evaluation trials must not be among out: the bound on them is
// valid because the threshold does not depend on them.
func SelectThreshold(out []Outcome, evalNeg, evalPos int, delta, alpha float64) (float64, error) {
	return selectThreshold(out, evalNeg, evalPos, delta, alpha, false)
}

// selectThreshold is SelectThreshold, restricted with lowerHalf to the
// candidates in the lower half of the statistics (a test whose informative
// side, "guess no canary when Stat is low", is fixed before the trials).
func selectThreshold(out []Outcome, evalNeg, evalPos int, delta, alpha float64, lowerHalf bool) (float64, error) {
	var neg, pos []float64
	for _, o := range out {
		if o.Canary {
			pos = append(pos, o.Stat)
		} else {
			neg = append(neg, o.Stat)
		}
	}
	if len(neg) == 0 || len(pos) == 0 || evalNeg < 1 || evalPos < 1 {
		return 0, fmt.Errorf("audit: threshold selection needs trials of both kinds (%d without, %d with the canary; evaluation %d, %d)", len(neg), len(pos), evalNeg, evalPos)
	}
	sort.Float64s(neg)
	sort.Float64s(pos)
	all := append(append([]float64(nil), neg...), pos...)
	sort.Float64s(all)
	stride := max(1, len(all)/maxCandidates)
	end := len(all)
	if lowerHalf {
		end = (len(all) + 1) / 2
	}
	best, bestEps := all[0], -1.0
	for i := 0; i < end; i += stride {
		t := all[i]
		fp := len(neg) - sort.Search(len(neg), func(j int) bool { return neg[j] > t })
		fn := sort.Search(len(pos), func(j int) bool { return pos[j] > t })
		c := Counts{
			Neg: evalNeg, FP: scale(fp, len(neg), evalNeg),
			Pos: evalPos, FN: scale(fn, len(pos), evalPos),
		}
		b, err := EpsilonLowerBound(c, delta, alpha)
		if err != nil {
			return 0, err
		}
		if b.Epsilon > bestEps {
			best, bestEps = t, b.Epsilon
		}
	}
	return best, nil
}

// scale is k/n of m, rounded to the nearest count.
func scale(k, n, m int) int {
	return int(math.Round(float64(k) / float64(n) * float64(m)))
}
