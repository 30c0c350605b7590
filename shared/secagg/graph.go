package secagg

import (
	"crypto/sha256"
	"math/bits"
	mrand "math/rand/v2"
	"slices"
)

// SparseAbove is the cohort size the sparse graph needs: Params.Degree
// may be set only when MaxClients exceeds it. Smaller cohorts keep the
// complete graph of Bonawitz et al.
const SparseAbove = 50

const labelGraph = "browserfl/secagg/v1 graph"

// graph is the masking graph of one round over U1: the Harary graph
// H(n, k) (each position joined to the k/2 nearest on either side of a
// cycle of n positions) under a relabelling of U1 drawn from a hash of
// the round's public data (docs/secagg.md, SecAgg+).
type graph struct {
	nbrs map[uint32][]uint32 // sorted neighbours of each client of U1
}

// graphSeed is the relabelling's seed: SHA-256 of the session, the
// round and every field of every advertisement of U1 (its id and its
// two fresh public keys, which it signs), in order. Every party computes
// it from the key list; nobody draws it.
func graphSeed(h Header, clients []Advertisement) [32]byte {
	b := append([]byte(labelGraph), h.bytes()...)
	b = appendIDs(b, uint32(len(clients)))
	for i := range clients {
		a := &clients[i]
		b = appendIDs(b, a.Client)
		b = append(b, a.CPub[:]...)
		b = append(b, a.SPub[:]...)
	}
	return sha256.Sum256(b)
}

// uniformN is a uniform integer in [0, n) from the stream (Lemire's
// multiply with rejection: no bias).
func uniformN(prg *mrand.ChaCha8, n uint64) uint64 {
	thresh := -n % n
	for {
		hi, lo := bits.Mul64(prg.Uint64(), n)
		if lo >= thresh {
			return hi
		}
	}
}

// relabel returns the clients' order on the cycle: a Fisher-Yates
// shuffle of ids (sorted) driven by ChaCha8 keyed with seed.
func relabel(seed [32]byte, ids []uint32) []uint32 {
	order := slices.Clone(ids)
	prg := mrand.NewChaCha8(seed)
	for i := len(order) - 1; i > 0; i-- {
		j := uniformN(prg, uint64(i+1))
		order[i], order[j] = order[j], order[i]
	}
	return order
}

// newGraph returns the round's graph of degree k over the key list's
// clients, or nil (the complete graph) when k is 0 or k >= |U1| - 1.
func newGraph(h Header, clients []Advertisement, k int) *graph {
	n := len(clients)
	if k == 0 || k >= n-1 {
		return nil
	}
	ids := make([]uint32, n)
	for i := range clients {
		ids[i] = clients[i].Client
	}
	order := relabel(graphSeed(h, clients), ids)
	g := &graph{nbrs: make(map[uint32][]uint32, n)}
	for i, u := range order {
		nb := make([]uint32, 0, k)
		for j := 1; j <= k/2; j++ {
			nb = append(nb, order[(i+j)%n], order[(i-j+n)%n])
		}
		slices.Sort(nb)
		g.nbrs[u] = nb
	}
	return g
}

// hood is u's neighbours and u, sorted: the points at which u shares
// its secrets.
func (g *graph) hood(u uint32) []uint32 {
	out := append(slices.Clone(g.nbrs[u]), u)
	slices.Sort(out)
	return out
}

// adjacent reports whether v is u's neighbour.
func (g *graph) adjacent(u, v uint32) bool { return member(g.nbrs[u], v) }

// Neighbours returns the sorted neighbours of client u in the graph of
// degree k that the key list kl makes (every other client of the list
// when k is 0 or at least |U1| - 1). Every party derives the same graph.
func Neighbours(kl *KeyList, k int, u uint32) []uint32 {
	if g := newGraph(kl.Header, kl.Clients, k); g != nil {
		return slices.Clone(g.nbrs[u])
	}
	var out []uint32
	for _, a := range kl.Clients {
		if a.Client != u {
			out = append(out, a.Client)
		}
	}
	return out
}

// intersect returns the elements of the sorted set a that are in the
// sorted set b.
func intersect(a, b []uint32) []uint32 {
	var out []uint32
	for _, v := range a {
		if member(b, v) {
			out = append(out, v)
		}
	}
	return out
}
