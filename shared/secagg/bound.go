package secagg

import "math"

// SparseRisk bounds the failures of one round on the sparse graph
// H(n, k) under a uniform relabelling, with c colluding clients and at
// most gone clients leaving during the round, both sets fixed
// independently of the relabelling (a server that follows the protocol:
// docs/secagg.md, SecAgg+). Each field is a union bound over the n
// clients or the n windows of the cycle.
type SparseRisk struct {
	// Exposed bounds the probability that some client's neighbourhood
	// holds tau or more colluders, who together hold tau of its shares.
	Exposed float64
	// Split bounds the probability that the honest survivors' graph is
	// cut: some k/2 consecutive positions of the cycle hold no honest
	// survivor. Otherwise the server learns only the sum of every honest
	// survivor's input, as with the complete graph.
	Split float64
	// Short bounds the probability that some client keeps fewer than
	// tau answering neighbours, so that a secret cannot be reconstructed
	// and the round aborts (correctness, not privacy).
	Short float64
}

// Privacy is the probability bound of a round whose sum reveals more
// than the sum of all its honest survivors: Exposed + Split.
func (r SparseRisk) Privacy() float64 { return r.Exposed + r.Split }

// logChoose is ln C(a, b), for 0 <= b <= a.
func logChoose(a, b int) float64 {
	x, _ := math.Lgamma(float64(a + 1))
	y, _ := math.Lgamma(float64(b + 1))
	z, _ := math.Lgamma(float64(a - b + 1))
	return x - y - z
}

// hypTail is P(X >= x) for X hypergeometric: draws of a population of
// size pop holding good marked elements.
func hypTail(pop, good, draws, x int) float64 {
	if x <= 0 {
		return 1
	}
	hi := min(good, draws)
	if x > hi {
		return 0
	}
	total := logChoose(pop, draws)
	p := 0.0
	for i := max(x, draws-(pop-good)); i <= hi; i++ {
		p += math.Exp(logChoose(good, i) + logChoose(pop-good, draws-i) - total)
	}
	return min(p, 1)
}

// SparseBound returns the bounds of SparseRisk for n clients in U1,
// degree k (even), neighbourhood threshold tau, c colluders and at most
// gone clients leaving (at any step).
func SparseBound(n, k, tau, c, gone int) SparseRisk {
	w := k / 2
	var r SparseRisk
	r.Exposed = min(1, float64(n)*hypTail(n-1, c, k, tau))
	if bad := c + gone; bad >= w {
		r.Split = min(1, float64(n)*math.Exp(logChoose(bad, w)-logChoose(n, w)))
	}
	r.Short = min(1, float64(n)*hypTail(n-1, gone, k, k-tau+1))
	return r
}

// ChooseSparse returns the smallest even degree k, and for it the
// largest neighbourhood threshold tau whose Short stays within abort
// (the most shares a reconstruction needs that dropouts allow), such
// that a round of n clients with c colluders and at most gone leaving
// keeps Privacy() within privacy. ok is false when no k below n - 1
// does: the complete graph is then the only choice.
func ChooseSparse(n, c, gone int, privacy, abort float64) (k, tau int, risk SparseRisk, ok bool) {
	for k = 2; k < n-1; k += 2 {
		for tau = k + 1; tau >= 2; tau-- {
			if risk = SparseBound(n, k, tau, c, gone); risk.Short <= abort {
				break
			}
		}
		if tau >= 2 && risk.Short <= abort && risk.Privacy() <= privacy {
			return k, tau, risk, true
		}
	}
	return 0, 0, SparseRisk{}, false
}
