package secagg

import (
	"math"
	"math/big"
	"testing"
)

// exactTail is P(Hyp(pop, good, draws) >= x) by exact enumeration.
func exactTail(pop, good, draws, x int) float64 {
	num := new(big.Int)
	for i := max(x, 0); i <= min(good, draws); i++ {
		var a, b big.Int
		a.Binomial(int64(good), int64(i))
		b.Binomial(int64(pop-good), int64(draws-i))
		num.Add(num, a.Mul(&a, &b))
	}
	var den big.Int
	den.Binomial(int64(pop), int64(draws))
	f, _ := new(big.Rat).SetFrac(num, &den).Float64()
	return f
}

// TestHypTail: the hypergeometric tail against exact enumeration.
func TestHypTail(t *testing.T) {
	for _, tc := range [][4]int{{10, 3, 4, 2}, {59, 6, 36, 5}, {299, 30, 68, 28}, {299, 90, 52, 35}, {99, 30, 42, 26}, {20, 0, 5, 1}, {20, 5, 5, 0}} {
		got, want := hypTail(tc[0], tc[1], tc[2], tc[3]), exactTail(tc[0], tc[1], tc[2], tc[3])
		if math.Abs(got-want) > 1e-9*want+1e-300 {
			t.Errorf("hypTail%v = %g, exact %g", tc, got, want)
		}
	}
}

// TestSparseBoundSimulated: on graphs this package derives (n = 60,
// small k, so that the events are frequent), with colluders and gone
// clients drawn independently of the graph, the frequency of each event
// stays within its bound.
func TestSparseBoundSimulated(t *testing.T) {
	const n, k, tau, c, gone, runs = 60, 10, 4, 6, 18, 4000
	rng := seeded(t)
	var exposed, split, short int
	for r := range runs {
		kl := &KeyList{Header: Header{Round: uint64(r)}}
		for id := uint32(1); id <= n; id++ {
			kl.Clients = append(kl.Clients, Advertisement{Client: id})
		}
		g := newGraph(kl.Header, kl.Clients, k)
		perm := rng.Perm(n)
		col, out := map[uint32]bool{}, map[uint32]bool{}
		for i, j := range perm {
			switch {
			case i < c:
				col[uint32(j+1)] = true
			case i < c+gone:
				out[uint32(j+1)] = true
			}
		}
		var e, s, sh bool
		for u := uint32(1); u <= n; u++ {
			nc, ng := 0, 0
			for _, v := range g.nbrs[u] {
				if col[v] {
					nc++
				}
				if out[v] || col[v] {
					ng++
				}
			}
			e = e || (!col[u] && nc >= tau)
			sh = sh || k-(ng-nc) < tau
		}
		s = !connected(g, func(v uint32) bool { return !col[v] && !out[v] })
		if e {
			exposed++
		}
		if s {
			split++
		}
		if sh {
			short++
		}
	}
	b := SparseBound(n, k, tau, c, gone)
	for _, ev := range []struct {
		name  string
		count int
		bound float64
	}{{"exposed", exposed, b.Exposed}, {"split", split, b.Split}, {"short", short, b.Short}} {
		f := float64(ev.count) / runs
		// 4 standard errors of slack on the frequency.
		if f-4*math.Sqrt(f*(1-f)/runs) > ev.bound {
			t.Errorf("%s: frequency %.4f over %d runs, bound %.4f", ev.name, f, runs, ev.bound)
		}
		if ev.count == 0 {
			t.Errorf("%s never happened: the simulation cannot test its bound", ev.name)
		}
		t.Logf("%s: frequency %.4f, bound %.4f", ev.name, f, ev.bound)
	}
}

// connected reports whether the clients for which in holds form one
// connected piece of g.
func connected(g *graph, in func(uint32) bool) bool {
	var start uint32
	total := 0
	for u := range g.nbrs {
		if in(u) {
			total++
			start = u
		}
	}
	if total == 0 {
		return true
	}
	seen := map[uint32]bool{start: true}
	stack := []uint32{start}
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, v := range g.nbrs[u] {
			if in(v) && !seen[v] {
				seen[v] = true
				stack = append(stack, v)
			}
		}
	}
	return len(seen) == total
}

// TestChooseSparse: the table of docs/secagg.md (delta = 0.3, 2^-40 a
// round, aborts within 2^-20), each choice meeting its targets and the
// next smaller degree not.
func TestChooseSparse(t *testing.T) {
	privacy, abort := math.Ldexp(1, -40), math.Ldexp(1, -20)
	for _, tc := range []struct{ n, c, k, tau int }{
		{60, 0, 36, 18}, {100, 0, 42, 17}, {100, 10, 54, 26}, {300, 0, 52, 18},
		{300, 30, 68, 28}, {1000, 100, 88, 36}, {10000, 1000, 106, 43},
	} {
		gone := tc.n * 3 / 10
		k, tau, r, ok := ChooseSparse(tc.n, tc.c, gone, privacy, abort)
		if !ok || k != tc.k || tau != tc.tau {
			t.Errorf("n=%d c=%d: k=%d tau=%d ok=%v, want k=%d tau=%d", tc.n, tc.c, k, tau, ok, tc.k, tc.tau)
			continue
		}
		if r.Privacy() > privacy || r.Short > abort {
			t.Errorf("n=%d c=%d: risk %+v over the targets", tc.n, tc.c, r)
		}
		if SparseBound(tc.n, k, tau+1, tc.c, gone).Short <= abort {
			t.Errorf("n=%d c=%d: tau=%d is not the largest", tc.n, tc.c, tau)
		}
		for tau2 := 2; tau2 <= k-1; tau2++ {
			r2 := SparseBound(tc.n, k-2, tau2, tc.c, gone)
			if r2.Privacy() <= privacy && r2.Short <= abort {
				t.Errorf("n=%d c=%d: k=%d, tau=%d would do", tc.n, tc.c, k-2, tau2)
			}
		}
	}
	if _, _, _, ok := ChooseSparse(20, 4, 10, privacy, abort); ok {
		t.Error("a sparse graph for 20 clients, half of them gone or colluding")
	}
}
