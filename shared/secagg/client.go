package secagg

import (
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
)

// Directory holds the long-term ed25519 public key of every client that
// may take part, by client id (non-zero). It must come from outside the
// server's control (docs/secagg.md, the threat model).
type Directory map[uint32]ed25519.PublicKey

func (d Directory) check() error {
	for id, pub := range d {
		if id == 0 || id > MaxID {
			return fmt.Errorf("secagg: directory: client id %d not in [1, %d]: %w", id, MaxID, ErrUnknownClient)
		}
		if len(pub) != ed25519.PublicKeySize {
			return fmt.Errorf("secagg: directory: client %d's key of %d bytes: %w", id, len(pub), ErrMalformed)
		}
	}
	return nil
}

// client steps: what the next call may be.
const (
	stepAdvertise = iota
	stepShare
	stepMask
	stepConsistency
	stepUnmask
	stepDone
	stepAborted
)

// Client is one client's side of a round. Its methods are the protocol's
// steps, called in order with the server's messages; each returns the
// message to send. After any error the client has aborted the round and
// refuses every further step.
type Client struct {
	p    Params
	h    Header
	k    int
	id   uint32
	sign ed25519.PrivateKey
	dir  Directory
	step int

	cKey, sKey *ecdh.PrivateKey
	selfSeed   [SeedSize]byte
	adv        Advertisement

	peers map[uint32]Advertisement // U1, by id
	// cShared is the agreement on the encryption keys with each other
	// client of U1, from ShareKeys to MaskedInput.
	cShared map[uint32][]byte
	// bShares and sShares are the shares of each client of U2 this
	// client holds (its own included).
	bShares, sShares map[uint32]ShareValue
	// u1 is the key list's clients; u2 those of them whose shares this
	// client holds (its neighbourhood's only, with the sparse graph).
	u1, u2, u3 []uint32
	// g is the round's sparse graph, nil for the complete graph; thr is
	// the shares that reconstruct a secret: t, or tau with the graph.
	g   *graph
	thr int
}

// near reports whether v is in this client's neighbourhood: every
// client with the complete graph.
func (c *Client) near(v uint32) bool {
	return c.g == nil || v == c.id || c.g.adjacent(c.id, v)
}

// NewClient returns client id's side of the round p; signer is its
// long-term key, whose public half dir must list under id.
func NewClient(p Params, id uint32, signer ed25519.PrivateKey, dir Directory) (*Client, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("secagg: client %d: %w", id, err)
	}
	if err := dir.check(); err != nil {
		return nil, fmt.Errorf("secagg: client %d: %w", id, err)
	}
	pub, ok := dir[id]
	if !ok || id == 0 {
		return nil, fmt.Errorf("secagg: client %d not in the directory: %w", id, ErrUnknownClient)
	}
	if len(signer) != ed25519.PrivateKeySize || !pub.Equal(signer.Public()) {
		return nil, fmt.Errorf("secagg: client %d: signing key is not the directory's: %w", id, ErrSignature)
	}
	return &Client{p: p, h: Header{Session: p.Session, Round: p.Round}, k: p.Bits(), id: id, sign: signer, dir: maps.Clone(dir)}, nil
}

// ID is the client's id.
func (c *Client) ID() uint32 { return c.id }

// fail aborts the round: no further step is answered.
func (c *Client) fail(err error) error {
	c.step = stepAborted
	return fmt.Errorf("secagg: client %d: %w", c.id, err)
}

func (c *Client) enter(step int, name string) error {
	if c.step != step {
		err := fmt.Errorf("%s called at step %d, want %d: %w", name, c.step, step, ErrState)
		if c.step != stepAborted {
			return c.fail(err)
		}
		return fmt.Errorf("secagg: client %d: %w", c.id, err)
	}
	return nil
}

func (c *Client) checkHeader(h Header, name string) error {
	if h != c.h {
		return fmt.Errorf("%s of session %x round %d in session %x round %d: %w", name, h.Session, h.Round, c.h.Session, c.h.Round, ErrWrongRound)
	}
	return nil
}

// AdvertiseKeys is step 0: fresh X25519 keys for this round, a fresh
// self-mask seed, the signed advertisement of both keys, and the seed's
// commitment signed with them for the server.
func (c *Client) AdvertiseKeys() (*AdvertiseKeys, error) {
	if err := c.enter(stepAdvertise, "AdvertiseKeys"); err != nil {
		return nil, err
	}
	var err error
	if c.cKey, err = ecdh.X25519().GenerateKey(rand.Reader); err != nil {
		return nil, c.fail(fmt.Errorf("encryption key: %w", err))
	}
	if c.sKey, err = ecdh.X25519().GenerateKey(rand.Reader); err != nil {
		return nil, c.fail(fmt.Errorf("masking key: %w", err))
	}
	rand.Read(c.selfSeed[:])
	a := Advertisement{Client: c.id}
	copy(a.CPub[:], c.cKey.PublicKey().Bytes())
	copy(a.SPub[:], c.sKey.PublicKey().Bytes())
	copy(a.Sig[:], ed25519.Sign(c.sign, advertiseSigned(c.h, &a)))
	out := &AdvertiseKeys{Header: c.h, Advertisement: a, Commit: commitSelfSeed(c.h, c.id, c.selfSeed)}
	copy(out.CommitSig[:], ed25519.Sign(c.sign, commitmentSigned(c.h, &a, out.Commit)))
	c.adv = a
	c.step = stepShare
	return out, nil
}

// ShareKeys is step 1: checks every listed advertisement's signature,
// then shares the self-mask seed and the masking secret key, t out of
// |U1|, and encrypts each other client's shares for it.
func (c *Client) ShareKeys(m *KeyList) (*ShareKeys, error) {
	if err := c.enter(stepShare, "ShareKeys"); err != nil {
		return nil, err
	}
	if err := c.checkHeader(m.Header, "key list"); err != nil {
		return nil, c.fail(err)
	}
	if len(m.Clients) < c.p.Threshold {
		return nil, c.fail(fmt.Errorf("key list of %d clients, threshold %d: %w", len(m.Clients), c.p.Threshold, ErrBelowThreshold))
	}
	if len(m.Clients) > c.p.MaxClients {
		return nil, c.fail(fmt.Errorf("key list of %d clients, at most %d: %w", len(m.Clients), c.p.MaxClients, ErrRange))
	}
	peers := make(map[uint32]Advertisement, len(m.Clients))
	ids := make([]uint32, 0, len(m.Clients))
	for i := range m.Clients {
		a := &m.Clients[i]
		pub, ok := c.dir[a.Client]
		switch {
		case !ok:
			return nil, c.fail(fmt.Errorf("key list: client %d: %w", a.Client, ErrUnknownClient))
		case i > 0 && a.Client <= m.Clients[i-1].Client:
			return nil, c.fail(fmt.Errorf("key list: client %d out of order: %w", a.Client, ErrDuplicate))
		case !verify(pub, advertiseSigned(c.h, a), a.Sig):
			return nil, c.fail(fmt.Errorf("key list: client %d's advertisement: %w", a.Client, ErrSignature))
		case a.Client == c.id && *a != c.adv:
			return nil, c.fail(fmt.Errorf("key list: this client's advertisement altered: %w", ErrSignature))
		}
		peers[a.Client] = *a
		ids = append(ids, a.Client)
	}
	if _, ok := peers[c.id]; !ok {
		return nil, c.fail(fmt.Errorf("key list without this client: %w", ErrUnknownClient))
	}
	c.u1, c.g, c.thr = slices.Clone(ids), newGraph(c.h, m.Clients, c.p.Degree), c.p.Threshold
	if c.g != nil {
		// Share with, and later mask against, the neighbours only.
		c.thr, ids = c.p.NeighbourThreshold, c.g.hood(c.id)
		maps.DeleteFunc(peers, func(v uint32, _ Advertisement) bool { return !c.near(v) })
	}
	var sk [SeedSize]byte
	copy(sk[:], c.sKey.Bytes())
	bSh, err := splitSecret(c.selfSeed, c.thr, ids)
	if err != nil {
		return nil, c.fail(err)
	}
	sSh, err := splitSecret(sk, c.thr, ids)
	if err != nil {
		return nil, c.fail(err)
	}
	c.cShared = make(map[uint32][]byte, len(ids))
	c.bShares = make(map[uint32]ShareValue, len(ids))
	c.sShares = make(map[uint32]ShareValue, len(ids))
	out := &ShareKeys{Header: c.h, From: c.id, Shares: make([]EncryptedShare, 0, len(ids)-1)}
	for i, v := range ids {
		if v == c.id {
			c.bShares[v], c.sShares[v] = bSh[i], sSh[i]
			continue
		}
		shared, err := agree(c.cKey, peers[v].CPub)
		if err != nil {
			return nil, c.fail(fmt.Errorf("client %d's encryption key: %w", v, err))
		}
		c.cShared[v] = shared
		aead, err := shareAEAD(c.h, shared, c.id, v)
		if err != nil {
			return nil, c.fail(err)
		}
		out.Shares = append(out.Shares, EncryptedShare{From: c.id, To: v, Ciphertext: sealShares(aead, c.h, c.id, v, bSh[i], sSh[i])})
	}
	c.peers = peers
	c.step = stepMask
	return out, nil
}

// MaskedInput is step 2: decrypts the shares of U2 (the clients whose
// shares the server delivers, and this one) and returns
// y = x + PRG(b) + sum_{v<u} PRG(s_uv) - sum_{v>u} PRG(s_uv) over
// Z_(2^k), for v in U2. Every |x_i| must be at most MaxAbs.
func (c *Client) MaskedInput(m *ShareDelivery, x []int64) (*MaskedInput, error) {
	if err := c.enter(stepMask, "MaskedInput"); err != nil {
		return nil, err
	}
	if err := c.checkHeader(m.Header, "share delivery"); err != nil {
		return nil, c.fail(err)
	}
	if m.To != c.id {
		return nil, c.fail(fmt.Errorf("share delivery for client %d: %w", m.To, ErrUnknownClient))
	}
	if len(x) != c.p.Dim {
		return nil, c.fail(fmt.Errorf("input of %d elements, want %d: %w", len(x), c.p.Dim, ErrRange))
	}
	for i, v := range x {
		if v > c.p.MaxAbs || v < -c.p.MaxAbs {
			return nil, c.fail(fmt.Errorf("input element %d is %d, beyond %d: %w", i, v, c.p.MaxAbs, ErrRange))
		}
	}
	if len(m.Shares)+1 < c.thr {
		return nil, c.fail(fmt.Errorf("shares of %d clients and this one, threshold %d: %w", len(m.Shares), c.thr, ErrBelowThreshold))
	}
	u2 := []uint32{c.id}
	for i, s := range m.Shares {
		_, ok := c.peers[s.From]
		switch {
		case s.To != c.id:
			return nil, c.fail(fmt.Errorf("share for client %d: %w", s.To, ErrUnknownClient))
		case !ok || s.From == c.id:
			return nil, c.fail(fmt.Errorf("share from client %d, not in U1 or not a neighbour: %w", s.From, ErrUnknownClient))
		case i > 0 && s.From <= m.Shares[i-1].From:
			return nil, c.fail(fmt.Errorf("share from client %d out of order: %w", s.From, ErrDuplicate))
		}
		aead, err := shareAEAD(c.h, c.cShared[s.From], s.From, c.id)
		if err != nil {
			return nil, c.fail(err)
		}
		b, sk, err := openShares(aead, c.h, s.From, c.id, s.Ciphertext)
		if err != nil {
			return nil, c.fail(err)
		}
		c.bShares[s.From], c.sShares[s.From] = b, sk
		u2 = append(u2, s.From)
	}
	slices.Sort(u2)
	for v := range c.bShares {
		if !slices.Contains(u2, v) {
			delete(c.bShares, v)
			delete(c.sShares, v)
		}
	}
	y := make([]uint64, c.p.Dim)
	for i, v := range x {
		y[i] = encode(v, c.k)
	}
	addMask(y, c.selfSeed, c.k, false)
	for _, v := range u2 {
		if v == c.id {
			continue
		}
		seed, err := pairwiseSeed(c.h, c.sKey, c.peers[v].SPub, c.id, v)
		if err != nil {
			return nil, c.fail(fmt.Errorf("pairwise mask with client %d: %w", v, err))
		}
		addMask(y, seed, c.k, v > c.id)
	}
	c.u2 = u2
	c.cShared = nil
	c.step = stepConsistency
	return &MaskedInput{Header: c.h, From: c.id, Bits: uint8(c.k), Y: y}, nil
}

// Consistency is step 3: checks the survivor set U3 (at least t clients
// of U2, this one among them) and signs it with the session and round.
func (c *Client) Consistency(m *SurvivorList) (*ConsistencySig, error) {
	if err := c.enter(stepConsistency, "Consistency"); err != nil {
		return nil, err
	}
	if err := c.checkHeader(m.Header, "survivor list"); err != nil {
		return nil, c.fail(err)
	}
	if len(m.Survivors) < c.p.Threshold {
		return nil, c.fail(fmt.Errorf("%d survivors, threshold %d: %w", len(m.Survivors), c.p.Threshold, ErrBelowThreshold))
	}
	for i, v := range m.Survivors {
		if i > 0 && v <= m.Survivors[i-1] {
			return nil, c.fail(fmt.Errorf("survivor %d out of order: %w", v, ErrDuplicate))
		}
		if _, ok := slices.BinarySearch(c.u2, v); !ok && (c.near(v) || !member(c.u1, v)) {
			return nil, c.fail(fmt.Errorf("survivor %d not in U2: %w", v, ErrUnknownClient))
		}
	}
	if _, ok := slices.BinarySearch(m.Survivors, c.id); !ok {
		return nil, c.fail(fmt.Errorf("survivor list without this client: %w", ErrSplitView))
	}
	if c.g != nil {
		if n := len(intersect(c.g.hood(c.id), m.Survivors)); n < c.thr {
			return nil, c.fail(fmt.Errorf("%d survivors in this client's neighbourhood, threshold %d: %w", n, c.thr, ErrBelowThreshold))
		}
	}
	c.u3 = slices.Clone(m.Survivors)
	out := &ConsistencySig{Header: c.h, From: c.id}
	copy(out.Sig[:], ed25519.Sign(c.sign, consistencySigned(c.h, c.u3)))
	c.step = stepUnmask
	return out, nil
}

// Unmask is step 4: checks at least t valid signatures of clients of U3
// over this same U3, and that the request asks for the self-mask seed
// shares of exactly U3 and the masking key shares of exactly U2 \ U3
// (never both for one client); only then reveals them.
func (c *Client) Unmask(m *UnmaskRequest) (*UnmaskResponse, error) {
	if err := c.enter(stepUnmask, "Unmask"); err != nil {
		return nil, err
	}
	if err := c.checkHeader(m.Header, "unmask request"); err != nil {
		return nil, c.fail(err)
	}
	alive := make(map[uint32]bool, len(m.Survivors))
	for _, v := range m.Survivors {
		alive[v] = true
	}
	for _, v := range m.Dropped {
		if alive[v] {
			return nil, c.fail(fmt.Errorf("asked for both shares of client %d: %w", v, ErrSplitView))
		}
	}
	if !slices.Equal(m.Survivors, c.u3) {
		return nil, c.fail(fmt.Errorf("survivors %v, signed %v: %w", m.Survivors, c.u3, ErrSplitView))
	}
	var dropped []uint32
	for _, v := range c.u2 {
		if _, ok := slices.BinarySearch(c.u3, v); !ok {
			dropped = append(dropped, v)
		}
	}
	near := slices.DeleteFunc(slices.Clone(m.Dropped), func(v uint32) bool { return !c.near(v) })
	if !slices.Equal(near, dropped) {
		return nil, c.fail(fmt.Errorf("dropped %v, this client's view %v: %w", m.Dropped, dropped, ErrSplitView))
	}
	for _, v := range m.Dropped {
		if !member(c.u1, v) {
			return nil, c.fail(fmt.Errorf("dropped client %d not in U1: %w", v, ErrUnknownClient))
		}
	}
	msg := consistencySigned(c.h, c.u3)
	valid := 0
	for i, s := range m.Sigs {
		if i > 0 && s.From <= m.Sigs[i-1].From {
			return nil, c.fail(fmt.Errorf("signature of client %d out of order: %w", s.From, ErrDuplicate))
		}
		if _, ok := slices.BinarySearch(c.u3, s.From); !ok {
			return nil, c.fail(fmt.Errorf("signature of client %d, not a survivor: %w", s.From, ErrUnknownClient))
		}
		if !verify(c.dir[s.From], msg, s.Sig) {
			return nil, c.fail(fmt.Errorf("client %d's consistency signature: %w", s.From, ErrSignature))
		}
		valid++
	}
	if valid < c.p.Threshold {
		return nil, c.fail(fmt.Errorf("%d consistency signatures, threshold %d: %w", valid, c.p.Threshold, ErrBelowThreshold))
	}
	if err := c.checkHoods(); err != nil {
		return nil, c.fail(err)
	}
	out := &UnmaskResponse{Header: c.h, From: c.id}
	for _, v := range c.u3 {
		if c.near(v) {
			out.BShares = append(out.BShares, Share{Of: v, Value: c.bShares[v]})
		}
	}
	for _, v := range dropped {
		out.SShares = append(out.SShares, Share{Of: v, Value: c.sShares[v]})
	}
	c.step = stepDone
	return out, nil
}

// checkHoods is the sparse graph's check before revealing: every
// neighbour whose self-mask share this client reveals keeps at least
// tau survivors in its neighbourhood, so that its input is not unmasked
// in a sum of fewer (docs/secagg.md, SecAgg+).
func (c *Client) checkHoods() error {
	if c.g == nil {
		return nil
	}
	for _, v := range c.g.nbrs[c.id] {
		if !member(c.u3, v) {
			continue
		}
		if n := len(intersect(c.g.hood(v), c.u3)); n < c.thr {
			return fmt.Errorf("client %d keeps %d survivors in its neighbourhood, threshold %d: %w", v, n, c.thr, ErrBelowThreshold)
		}
	}
	return nil
}
