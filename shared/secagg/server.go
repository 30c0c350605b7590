package secagg

import (
	"crypto/ecdh"
	"crypto/rand"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
)

// Server is the server's side of a round: it collects each step's
// messages (Receive...) and closes the step (KeyList, Deliveries,
// SurvivorList, UnmaskRequest, Sum), refusing to go on with fewer than
// t clients. A client that stops answering is simply left out of the
// next step's set.
type Server struct {
	p    Params
	h    Header
	k    int
	dir  Directory
	step int

	adv    map[uint32]Advertisement
	commit map[uint32][32]byte
	u1     []uint32
	shares map[uint32][]EncryptedShare
	u2     []uint32
	y      map[uint32][]uint64
	u3     []uint32
	sigs   map[uint32][64]byte
	u4     []uint32
	resp   map[uint32]*UnmaskResponse
	// g is the round's sparse graph (from the key list), nil for the
	// complete graph.
	g *graph
}

// others is the clients of U1 that u shares with: its neighbours, or
// every other client with the complete graph.
func (s *Server) others(u uint32) []uint32 {
	if s.g != nil {
		return s.g.nbrs[u]
	}
	return slices.DeleteFunc(slices.Clone(s.u1), func(v uint32) bool { return v == u })
}

// hood is u and the clients it shares with, sorted.
func (s *Server) hood(u uint32) []uint32 {
	if s.g != nil {
		return s.g.hood(u)
	}
	return s.u1
}

// NewServer returns the server's side of the round p.
func NewServer(p Params, dir Directory) (*Server, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("secagg: server: %w", err)
	}
	if err := dir.check(); err != nil {
		return nil, fmt.Errorf("secagg: server: %w", err)
	}
	return &Server{
		p: p, h: Header{Session: p.Session, Round: p.Round}, k: p.Bits(), dir: maps.Clone(dir),
		adv: map[uint32]Advertisement{}, commit: map[uint32][32]byte{}, shares: map[uint32][]EncryptedShare{},
		y: map[uint32][]uint64{}, sigs: map[uint32][64]byte{}, resp: map[uint32]*UnmaskResponse{},
	}, nil
}

func (s *Server) enter(step int, name string) error {
	if s.step != step {
		return fmt.Errorf("secagg: server: %s at step %d, want %d: %w", name, s.step, step, ErrState)
	}
	return nil
}

func (s *Server) checkHeader(h Header, name string) error {
	if h != s.h {
		return fmt.Errorf("secagg: server: %s of session %x round %d in session %x round %d: %w", name, h.Session, h.Round, s.h.Session, s.h.Round, ErrWrongRound)
	}
	return nil
}

// member reports whether id is in the sorted set.
func member(set []uint32, id uint32) bool {
	_, ok := slices.BinarySearch(set, id)
	return ok
}

func (s *Server) enough(n int, what string) error {
	if n < s.p.Threshold {
		return fmt.Errorf("secagg: server: %d %s, threshold %d: %w", n, what, s.p.Threshold, ErrBelowThreshold)
	}
	return nil
}

// ReceiveAdvertise takes a client's step 0 message.
func (s *Server) ReceiveAdvertise(m *AdvertiseKeys) error {
	if err := s.enter(stepAdvertise, "advertisement"); err != nil {
		return err
	}
	if err := s.checkHeader(m.Header, "advertisement"); err != nil {
		return err
	}
	pub, ok := s.dir[m.Client]
	switch {
	case !ok:
		return fmt.Errorf("secagg: server: advertisement of client %d: %w", m.Client, ErrUnknownClient)
	case !verify(pub, advertiseSigned(s.h, &m.Advertisement), m.Sig):
		return fmt.Errorf("secagg: server: advertisement of client %d: %w", m.Client, ErrSignature)
	case !verify(pub, commitmentSigned(s.h, &m.Advertisement, m.Commit), m.CommitSig):
		return fmt.Errorf("secagg: server: commitment of client %d: %w", m.Client, ErrSignature)
	}
	if _, dup := s.adv[m.Client]; dup {
		return fmt.Errorf("secagg: server: second advertisement of client %d: %w", m.Client, ErrDuplicate)
	}
	if len(s.adv) >= s.p.MaxClients {
		return fmt.Errorf("secagg: server: advertisement of client %d beyond %d clients: %w", m.Client, s.p.MaxClients, ErrRange)
	}
	// A key of low order would make every agreement with it fail: refuse
	// it here rather than let it abort the round at every client.
	probe, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("secagg: server: %w", err)
	}
	for _, k := range [][32]byte{m.CPub, m.SPub} {
		if _, err := agree(probe, k); err != nil {
			return fmt.Errorf("secagg: server: client %d: %w", m.Client, err)
		}
	}
	s.adv[m.Client] = m.Advertisement
	s.commit[m.Client] = m.Commit
	return nil
}

// KeyList closes step 0: U1 is the clients advertised, at least t.
func (s *Server) KeyList() (*KeyList, error) {
	if err := s.enter(stepAdvertise, "KeyList"); err != nil {
		return nil, err
	}
	if err := s.enough(len(s.adv), "clients advertised keys"); err != nil {
		return nil, err
	}
	s.u1 = slices.Sorted(maps.Keys(s.adv))
	out := &KeyList{Header: s.h}
	for _, id := range s.u1 {
		out.Clients = append(out.Clients, s.adv[id])
	}
	s.g = newGraph(s.h, out.Clients, s.p.Degree)
	s.step = stepShare
	return out, nil
}

// ReceiveShares takes a client's step 1 message: one share for every
// other client of U1.
func (s *Server) ReceiveShares(m *ShareKeys) error {
	if err := s.enter(stepShare, "shares"); err != nil {
		return err
	}
	if err := s.checkHeader(m.Header, "shares"); err != nil {
		return err
	}
	if !member(s.u1, m.From) {
		return fmt.Errorf("secagg: server: shares of client %d, not in U1: %w", m.From, ErrUnknownClient)
	}
	if _, dup := s.shares[m.From]; dup {
		return fmt.Errorf("secagg: server: second shares of client %d: %w", m.From, ErrDuplicate)
	}
	others := s.others(m.From)
	if len(m.Shares) != len(others) {
		return fmt.Errorf("secagg: server: client %d sent %d shares for %d others: %w", m.From, len(m.Shares), len(others), ErrMalformed)
	}
	for j, v := range others {
		if sh := m.Shares[j]; sh.From != m.From || sh.To != v {
			return fmt.Errorf("secagg: server: client %d's share %d from %d to %d, want to %d: %w", m.From, j, sh.From, sh.To, v, ErrMalformed)
		}
	}
	s.shares[m.From] = slices.Clone(m.Shares)
	return nil
}

// Deliveries closes step 1: U2 is the clients that sent their shares, at
// least t; each gets the shares the others of U2 sent it.
func (s *Server) Deliveries() ([]*ShareDelivery, error) {
	if err := s.enter(stepShare, "Deliveries"); err != nil {
		return nil, err
	}
	if err := s.enough(len(s.shares), "clients sent shares"); err != nil {
		return nil, err
	}
	s.u2 = slices.Sorted(maps.Keys(s.shares))
	out := make([]*ShareDelivery, 0, len(s.u2))
	to := make(map[uint32]*ShareDelivery, len(s.u2))
	for _, u := range s.u2 {
		d := &ShareDelivery{Header: s.h, To: u}
		out = append(out, d)
		to[u] = d
	}
	// By increasing sender, each share to its recipient in U2: one pass
	// over the shares (n^2 with the complete graph, n k with the sparse).
	for _, v := range s.u2 {
		for _, sh := range s.shares[v] {
			if d := to[sh.To]; d != nil {
				d.Shares = append(d.Shares, sh)
			}
		}
	}
	s.step = stepMask
	return out, nil
}

// ReceiveMasked takes a client's step 2 message.
func (s *Server) ReceiveMasked(m *MaskedInput) error {
	if err := s.enter(stepMask, "masked input"); err != nil {
		return err
	}
	if err := s.checkHeader(m.Header, "masked input"); err != nil {
		return err
	}
	switch {
	case !member(s.u2, m.From):
		return fmt.Errorf("secagg: server: masked input of client %d, not in U2: %w", m.From, ErrUnknownClient)
	case int(m.Bits) != s.k || len(m.Y) != s.p.Dim:
		return fmt.Errorf("secagg: server: client %d's input of %d elements in a %d-bit ring, want %d in %d: %w", m.From, len(m.Y), m.Bits, s.p.Dim, s.k, ErrMalformed)
	}
	if _, dup := s.y[m.From]; dup {
		return fmt.Errorf("secagg: server: second masked input of client %d: %w", m.From, ErrDuplicate)
	}
	for _, v := range m.Y {
		if v > ringMask(s.k) {
			return fmt.Errorf("secagg: server: client %d's element %d beyond the ring: %w", m.From, v, ErrMalformed)
		}
	}
	s.y[m.From] = slices.Clone(m.Y)
	return nil
}

// SurvivorList closes step 2: U3 is the clients whose masked input
// arrived, at least t.
func (s *Server) SurvivorList() (*SurvivorList, error) {
	if err := s.enter(stepMask, "SurvivorList"); err != nil {
		return nil, err
	}
	if err := s.enough(len(s.y), "masked inputs"); err != nil {
		return nil, err
	}
	s.u3 = slices.Sorted(maps.Keys(s.y))
	s.step = stepConsistency
	return &SurvivorList{Header: s.h, Survivors: slices.Clone(s.u3)}, nil
}

// ReceiveConsistency takes a client's step 3 signature of U3.
func (s *Server) ReceiveConsistency(m *ConsistencySig) error {
	if err := s.enter(stepConsistency, "consistency signature"); err != nil {
		return err
	}
	if err := s.checkHeader(m.Header, "consistency signature"); err != nil {
		return err
	}
	if !member(s.u3, m.From) {
		return fmt.Errorf("secagg: server: consistency signature of client %d, not in U3: %w", m.From, ErrUnknownClient)
	}
	if _, dup := s.sigs[m.From]; dup {
		return fmt.Errorf("secagg: server: second consistency signature of client %d: %w", m.From, ErrDuplicate)
	}
	if !verify(s.dir[m.From], consistencySigned(s.h, s.u3), m.Sig) {
		return fmt.Errorf("secagg: server: consistency signature of client %d: %w", m.From, ErrSignature)
	}
	s.sigs[m.From] = m.Sig
	return nil
}

// dropped is U2 \ U3.
func (s *Server) dropped() []uint32 {
	var out []uint32
	for _, v := range s.u2 {
		if !member(s.u3, v) {
			out = append(out, v)
		}
	}
	return out
}

// UnmaskRequest closes step 3: U4 is the clients that signed, at least
// t; each of them gets the request for the survivors' self-mask seed
// shares and the dropped clients' masking key shares, with the
// signatures of the first t of U4: what a client needs before it
// answers, and no more.
func (s *Server) UnmaskRequest() (*UnmaskRequest, error) {
	if err := s.enter(stepConsistency, "UnmaskRequest"); err != nil {
		return nil, err
	}
	if err := s.enough(len(s.sigs), "consistency signatures"); err != nil {
		return nil, err
	}
	s.u4 = slices.Sorted(maps.Keys(s.sigs))
	out := &UnmaskRequest{Header: s.h, Survivors: slices.Clone(s.u3), Dropped: s.dropped()}
	for _, v := range s.u4[:s.p.Threshold] {
		out.Sigs = append(out.Sigs, Signature{From: v, Sig: s.sigs[v]})
	}
	s.step = stepUnmask
	return out, nil
}

// ReceiveUnmask takes a client's step 4 shares.
func (s *Server) ReceiveUnmask(m *UnmaskResponse) error {
	if err := s.enter(stepUnmask, "unmask response"); err != nil {
		return err
	}
	if err := s.checkHeader(m.Header, "unmask response"); err != nil {
		return err
	}
	if !member(s.u4, m.From) {
		return fmt.Errorf("secagg: server: unmask response of client %d, not in U4: %w", m.From, ErrUnknownClient)
	}
	if _, dup := s.resp[m.From]; dup {
		return fmt.Errorf("secagg: server: second unmask response of client %d: %w", m.From, ErrDuplicate)
	}
	check := func(shares []Share, want []uint32, what string) error {
		if len(shares) != len(want) {
			return fmt.Errorf("secagg: server: client %d sent %d %s shares, want %d: %w", m.From, len(shares), what, len(want), ErrMalformed)
		}
		for i, sh := range shares {
			if sh.Of != want[i] {
				return fmt.Errorf("secagg: server: client %d's %s share %d of client %d: %w", m.From, what, i, sh.Of, ErrMalformed)
			}
		}
		return nil
	}
	if err := check(m.BShares, intersect(s.u3, s.hood(m.From)), "self-mask"); err != nil {
		return err
	}
	if err := check(m.SShares, intersect(s.dropped(), s.hood(m.From)), "masking key"); err != nil {
		return err
	}
	s.resp[m.From] = m
	return nil
}

// Signers is U4, the clients that signed U3 (after UnmaskRequest): each
// of them is sent the request, whose signatures are only the first t.
func (s *Server) Signers() []uint32 { return slices.Clone(s.u4) }

// Included is U3, the clients whose inputs the sum holds (after
// SurvivorList).
func (s *Server) Included() []uint32 { return slices.Clone(s.u3) }

// Sum closes step 4: with the shares of at least t clients it
// reconstructs each survivor's self-mask seed and each dropped client's
// masking key, checks them against their commitment and public key,
// removes every mask and returns the sum of the inputs of U3. It does
// not change the server's state.
func (s *Server) Sum() ([]int64, error) {
	if err := s.enter(stepUnmask, "Sum"); err != nil {
		return nil, err
	}
	if err := s.enough(len(s.resp), "unmask responses"); err != nil {
		return nil, err
	}
	if s.g != nil {
		return s.sparseSum()
	}
	// The first t responders' points: one set of Lagrange coefficients
	// for every secret.
	u5 := slices.Sorted(maps.Keys(s.resp))[:s.p.Threshold]
	l := lagrangeAtZero(u5)
	gather := func(j int, b bool) []ShareValue {
		out := make([]ShareValue, len(u5))
		for i, u := range u5 {
			if b {
				out[i] = s.resp[u].BShares[j].Value
			} else {
				out[i] = s.resp[u].SShares[j].Value
			}
		}
		return out
	}
	acc := make([]uint64, s.p.Dim)
	mask := ringMask(s.k)
	for j, u := range s.u3 {
		for i, v := range s.y[u] {
			acc[i] = (acc[i] + v) & mask
		}
		seed := combine(l, gather(j, true))
		if commitSelfSeed(s.h, u, seed) != s.commit[u] {
			return nil, fmt.Errorf("secagg: server: client %d's self-mask seed: %w", u, ErrBadShare)
		}
		addMask(acc, seed, s.k, true)
	}
	dropped := s.dropped()
	keys := make([]*ecdh.PrivateKey, len(dropped))
	for j, v := range dropped {
		sk := combine(l, gather(j, false))
		priv, err := ecdh.X25519().NewPrivateKey(sk[:])
		if err != nil {
			return nil, fmt.Errorf("secagg: server: client %d's masking key: %w", v, err)
		}
		if [32]byte(priv.PublicKey().Bytes()) != s.adv[v].SPub {
			return nil, fmt.Errorf("secagg: server: client %d's masking key: %w", v, ErrBadShare)
		}
		keys[j] = priv
	}
	// The dropped clients' pairwise masks, |U3| streams each, the bulk of
	// the work.
	return s.unmaskPairwise(acc, dropped, keys, func(uint32) []uint32 { return s.u3 })
}

// unmaskPairwise removes from acc the pairwise masks that the survivors
// peers(v) of each dropped client v (whose reconstructed masking key is
// keys[j] for v = dropped[j]) added against v, and returns the decoded
// sum. The streams are the bulk of the server's work: they are split by
// dropped client across the cores, each worker summing into its own
// vector.
func (s *Server) unmaskPairwise(acc []uint64, dropped []uint32, keys []*ecdh.PrivateKey, peers func(v uint32) []uint32) ([]int64, error) {
	mask := ringMask(s.k)
	workers := min(runtime.GOMAXPROCS(0), len(dropped))
	parts := make([][]uint64, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			part := make([]uint64, s.p.Dim)
			for j := w; j < len(dropped); j += workers {
				v := dropped[j]
				for _, u := range peers(v) {
					seed, err := pairwiseSeed(s.h, keys[j], s.adv[u].SPub, v, u)
					if err != nil {
						errs[w] = fmt.Errorf("secagg: server: mask of clients %d and %d: %w", u, v, err)
						return
					}
					// u added the mask if v < u, subtracted it if v > u.
					addMask(part, seed, s.k, v < u)
				}
			}
			parts[w] = part
		})
	}
	wg.Wait()
	for w := range workers {
		if errs[w] != nil {
			return nil, errs[w]
		}
		for i, v := range parts[w] {
			acc[i] = (acc[i] + v) & mask
		}
	}
	out := make([]int64, s.p.Dim)
	for i, r := range acc {
		out[i] = decode(r, s.k)
	}
	return out, nil
}
