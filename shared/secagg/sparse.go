package secagg

import (
	"crypto/ecdh"
	"fmt"
	"maps"
	"slices"
)

// shareOf is the share of client of in a response's sorted list.
func shareOf(list []Share, of uint32) (ShareValue, bool) {
	i, ok := slices.BinarySearchFunc(list, of, func(s Share, id uint32) int {
		switch {
		case s.Of < id:
			return -1
		case s.Of > id:
			return 1
		}
		return 0
	})
	if !ok {
		return ShareValue{}, false
	}
	return list[i].Value, true
}

// reconstruct interpolates client of's self-mask seed (b) or masking key
// from the first tau of the answering clients of its neighbourhood,
// each secret with its own Lagrange coefficients.
func (s *Server) reconstruct(of uint32, points []uint32, b bool) ([SeedSize]byte, error) {
	tau := s.p.NeighbourThreshold
	if len(points) < tau {
		return [SeedSize]byte{}, fmt.Errorf("secagg: server: %d answering neighbours of client %d, threshold %d: %w", len(points), of, tau, ErrBelowThreshold)
	}
	points = points[:tau]
	values := make([]ShareValue, tau)
	for i, w := range points {
		list := s.resp[w].SShares
		if b {
			list = s.resp[w].BShares
		}
		v, ok := shareOf(list, of)
		if !ok {
			return [SeedSize]byte{}, fmt.Errorf("secagg: server: client %d's response lacks its share of client %d: %w", w, of, ErrMalformed)
		}
		values[i] = v
	}
	return combine(lagrangeAtZero(points), values), nil
}

// sparseSum is Sum on the sparse graph: each survivor's self-mask seed
// from its neighbourhood's answers, each dropped client's masking key
// from its neighbours' answers, and only the masks of the dropped
// clients' surviving neighbours removed.
func (s *Server) sparseSum() ([]int64, error) {
	u5 := slices.Sorted(maps.Keys(s.resp))
	acc := make([]uint64, s.p.Dim)
	mask := ringMask(s.k)
	for _, u := range s.u3 {
		for i, v := range s.y[u] {
			acc[i] = (acc[i] + v) & mask
		}
		seed, err := s.reconstruct(u, intersect(s.g.hood(u), u5), true)
		if err != nil {
			return nil, err
		}
		if commitSelfSeed(s.h, u, seed) != s.commit[u] {
			return nil, fmt.Errorf("secagg: server: client %d's self-mask seed: %w", u, ErrBadShare)
		}
		addMask(acc, seed, s.k, true)
	}
	dropped := s.dropped()
	keys := make([]*ecdh.PrivateKey, len(dropped))
	for j, v := range dropped {
		sk, err := s.reconstruct(v, intersect(s.g.nbrs[v], u5), false)
		if err != nil {
			return nil, err
		}
		priv, err := ecdh.X25519().NewPrivateKey(sk[:])
		if err != nil {
			return nil, fmt.Errorf("secagg: server: client %d's masking key: %w", v, err)
		}
		if [32]byte(priv.PublicKey().Bytes()) != s.adv[v].SPub {
			return nil, fmt.Errorf("secagg: server: client %d's masking key: %w", v, ErrBadShare)
		}
		keys[j] = priv
	}
	// A survivor u masked against a dropped neighbour v (v's shares
	// reached u): k streams at most per dropped client.
	return s.unmaskPairwise(acc, dropped, keys, func(v uint32) []uint32 { return intersect(s.g.nbrs[v], s.u3) })
}
