package secagg

import (
	"encoding/binary"
	"fmt"
)

// Header binds a message to its session and round. Every message starts
// with a kind byte, the format version, then the header.
type Header struct {
	Session SessionID
	Round   uint64
}

// Head returns the header, which every message embeds: a relay tells
// a message of an earlier round or attempt from it before decrypting
// or checking anything.
func (h Header) Head() Header { return h }

// Message kinds, the first byte of every encoded message.
const (
	kindAdvertise byte = 1 + iota
	kindKeyList
	kindShareKeys
	kindShareDelivery
	kindMaskedInput
	kindSurvivors
	kindConsistency
	kindUnmaskRequest
	kindUnmaskResponse
)

// formatVersion is the second byte of every encoded message.
const formatVersion = 2

// Advertisement is one client's round keys, as every client of U1 gets
// them: the public X25519 key for encrypting shares (CPub), the one for
// pairwise masks (SPub), and its ed25519 signature of both with the
// session and round.
type Advertisement struct {
	Client uint32
	CPub   [32]byte
	SPub   [32]byte
	Sig    [64]byte
}

// AdvertiseKeys is step 0, client to server: the advertisement, the
// commitment to the client's self-mask seed, and its ed25519 signature
// of the keys and the commitment with the session and round. Only the
// server uses the commitment (it checks the seed it reconstructs), so
// the key list does not carry it.
type AdvertiseKeys struct {
	Header
	Advertisement
	Commit    [32]byte
	CommitSig [64]byte
}

// KeyList is step 1, server to every listed client: the advertisements
// of U1, by increasing client id.
type KeyList struct {
	Header
	Clients []Advertisement
}

// EncryptedShare is what From sends To: its shares of From's self-mask
// seed and masking key, encrypted for To. On the wire each carries only
// the id its message does not name once (ShareKeys: To; ShareDelivery:
// From).
type EncryptedShare struct {
	From, To   uint32
	Ciphertext [CiphertextSize]byte
}

// ShareKeys is step 1, client to server: one encrypted share for every
// other client of U1, by increasing recipient.
type ShareKeys struct {
	Header
	From   uint32
	Shares []EncryptedShare
}

// ShareDelivery is step 2, server to each client of U2: the shares sent
// to it by the other clients of U2, by increasing sender.
type ShareDelivery struct {
	Header
	To     uint32
	Shares []EncryptedShare
}

// MaskedInput is step 2, client to server: y_u in Z_(2^Bits)^d.
type MaskedInput struct {
	Header
	From uint32
	Bits uint8
	Y    []uint64
}

// SurvivorList is step 3, server to each client of U3: U3, the clients
// whose masked input the server holds, by increasing id.
type SurvivorList struct {
	Header
	Survivors []uint32
}

// ConsistencySig is step 3, client to server: the client's signature of
// the session, the round and U3.
type ConsistencySig struct {
	Header
	From uint32
	Sig  [64]byte
}

// Signature is one client's consistency signature.
type Signature struct {
	From uint32
	Sig  [64]byte
}

// UnmaskRequest is step 4, server to each client that signed: the
// survivors (whose self-mask seed shares it asks for), the dropped
// clients of U2 (whose masking key shares it asks for), and the
// signatures of U3, by increasing id.
type UnmaskRequest struct {
	Header
	Survivors []uint32
	Dropped   []uint32
	Sigs      []Signature
}

// Share is one decrypted share of client Of's secret.
type Share struct {
	Of    uint32
	Value ShareValue
}

// UnmaskResponse is step 4, client to server: shares of the survivors'
// self-mask seeds and of the dropped clients' masking keys.
type UnmaskResponse struct {
	Header
	From    uint32
	BShares []Share
	SShares []Share
}

// writer appends the encoding.
type writer struct{ b []byte }

func newWriter(kind byte, h Header) *writer {
	w := &writer{b: []byte{kind, formatVersion}}
	w.b = append(w.b, h.Session[:]...)
	w.u64(h.Round)
	return w
}

func (w *writer) u8(v uint8)     { w.b = append(w.b, v) }
func (w *writer) u32(v uint32)   { w.b = binary.BigEndian.AppendUint32(w.b, v) }
func (w *writer) u64(v uint64)   { w.b = binary.BigEndian.AppendUint64(w.b, v) }
func (w *writer) bytes(v []byte) { w.b = append(w.b, v...) }

func (w *writer) share(s ShareValue) {
	for _, v := range s {
		w.b = binary.BigEndian.AppendUint16(w.b, v)
	}
}

// reader decodes with strict checks; the first failure sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
	}
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail("%d bytes wanted, %d left", n, len(r.b))
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() uint8 {
	if v := r.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *reader) u32() uint32 {
	if v := r.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if v := r.take(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (r *reader) fixed(dst []byte) { copy(dst, r.take(len(dst))) }

// id reads a client id: never 0 (0 is where a Shamir polynomial holds its
// secret), at most MaxID.
func (r *reader) id() uint32 {
	v := r.u32()
	if r.err == nil && v == 0 {
		r.fail("client id 0")
	}
	if r.err == nil && v > MaxID {
		r.fail("client id %d over %d", v, MaxID)
	}
	return v
}

// count reads a count of items of size each, at most limit and no more
// than the bytes left can hold, before anything is allocated.
func (r *reader) count(limit, each int) int {
	n := r.u32()
	if r.err != nil {
		return 0
	}
	if uint64(n) > uint64(limit) {
		r.fail("count %d over %d", n, limit)
		return 0
	}
	if uint64(n)*uint64(each) > uint64(len(r.b)) {
		r.fail("count %d of %d bytes, %d bytes left", n, each, len(r.b))
		return 0
	}
	return int(n)
}

// ids reads a count and strictly increasing non-zero ids.
func (r *reader) ids(limit int) []uint32 {
	n := r.count(limit, 4)
	out := make([]uint32, n)
	for i := range out {
		out[i] = r.id()
		if i > 0 && out[i] <= out[i-1] && r.err == nil {
			r.fail("ids not increasing at %d", i)
		}
	}
	return out
}

func (r *reader) share() ShareValue {
	var s ShareValue
	if v := r.take(2 * chunks); v != nil {
		for c := range s {
			s[c] = binary.BigEndian.Uint16(v[2*c:])
		}
	}
	return s
}

// open checks the kind, version and reads the header.
func open(b []byte, kind byte, name string) (*reader, Header) {
	r := &reader{b: b}
	var h Header
	if k := r.u8(); r.err == nil && k != kind {
		r.fail("%s: kind %d, want %d", name, k, kind)
	}
	if v := r.u8(); r.err == nil && v != formatVersion {
		r.fail("%s: version %d, want %d", name, v, formatVersion)
	}
	r.fixed(h.Session[:])
	h.Round = r.u64()
	return r, h
}

// close checks that nothing is left and wraps the first error.
func (r *reader) close(name string) error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d bytes left over", len(r.b))
	}
	if r.err != nil {
		return fmt.Errorf("secagg: decode %s: %w", name, r.err)
	}
	return nil
}

const advertisementSize = 4 + 32 + 32 + 64

func (w *writer) advertisement(a *Advertisement) {
	w.u32(a.Client)
	w.bytes(a.CPub[:])
	w.bytes(a.SPub[:])
	w.bytes(a.Sig[:])
}

func (r *reader) advertisement() Advertisement {
	var a Advertisement
	a.Client = r.id()
	r.fixed(a.CPub[:])
	r.fixed(a.SPub[:])
	r.fixed(a.Sig[:])
	return a
}

// MarshalBinary encodes the message.
func (m *AdvertiseKeys) MarshalBinary() ([]byte, error) {
	w := newWriter(kindAdvertise, m.Header)
	w.advertisement(&m.Advertisement)
	w.bytes(m.Commit[:])
	w.bytes(m.CommitSig[:])
	return w.b, nil
}

// UnmarshalBinary decodes the message; errors wrap ErrMalformed.
func (m *AdvertiseKeys) UnmarshalBinary(b []byte) error {
	r, h := open(b, kindAdvertise, "advertise keys")
	out := AdvertiseKeys{Header: h, Advertisement: r.advertisement()}
	r.fixed(out.Commit[:])
	r.fixed(out.CommitSig[:])
	if err := r.close("advertise keys"); err != nil {
		return err
	}
	*m = out
	return nil
}

// MarshalBinary encodes the message.
func (m *KeyList) MarshalBinary() ([]byte, error) {
	w := newWriter(kindKeyList, m.Header)
	w.u32(uint32(len(m.Clients)))
	for i := range m.Clients {
		w.advertisement(&m.Clients[i])
	}
	return w.b, nil
}

// UnmarshalBinary decodes the message; errors wrap ErrMalformed.
func (m *KeyList) UnmarshalBinary(b []byte) error {
	r, h := open(b, kindKeyList, "key list")
	out := make([]Advertisement, r.count(MaxClients, advertisementSize))
	for i := range out {
		out[i] = r.advertisement()
		if i > 0 && out[i].Client <= out[i-1].Client && r.err == nil {
			r.fail("key list: clients not increasing at %d", i)
		}
	}
	if err := r.close("key list"); err != nil {
		return err
	}
	*m = KeyList{Header: h, Clients: out}
	return nil
}

// encryptedShareSize is an encrypted share's size on the wire: the other
// id and the ciphertext.
const encryptedShareSize = 4 + CiphertextSize

// encShares writes encrypted shares all from one sender (from != 0) or
// all to one recipient (to != 0), each with the other id only; a share
// of another sender or recipient is refused.
func (w *writer) encShares(s []EncryptedShare, from, to uint32) error {
	w.u32(uint32(len(s)))
	for i := range s {
		switch {
		case from != 0 && s[i].From != from:
			return fmt.Errorf("secagg: encode: share %d from client %d in client %d's message: %w", i, s[i].From, from, ErrMalformed)
		case to != 0 && s[i].To != to:
			return fmt.Errorf("secagg: encode: share %d to client %d in client %d's delivery: %w", i, s[i].To, to, ErrMalformed)
		case from != 0:
			w.u32(s[i].To)
		default:
			w.u32(s[i].From)
		}
		w.bytes(s[i].Ciphertext[:])
	}
	return nil
}

// encShares reads encrypted shares all from one sender (from != 0) or
// all to one recipient (to != 0), increasing in the other id.
func (r *reader) encShares(from, to uint32) []EncryptedShare {
	out := make([]EncryptedShare, r.count(MaxClients, encryptedShareSize))
	for i := range out {
		s := &out[i]
		s.From, s.To = from, to
		if from != 0 {
			s.To = r.id()
		} else {
			s.From = r.id()
		}
		r.fixed(s.Ciphertext[:])
		if r.err != nil {
			break
		}
		switch {
		case s.From == s.To:
			r.fail("share %d from client %d to itself", i, s.From)
		case i > 0 && from != 0 && s.To <= out[i-1].To:
			r.fail("shares not increasing at %d", i)
		case i > 0 && to != 0 && s.From <= out[i-1].From:
			r.fail("shares not increasing at %d", i)
		}
	}
	return out
}

// MarshalBinary encodes the message.
func (m *ShareKeys) MarshalBinary() ([]byte, error) {
	w := newWriter(kindShareKeys, m.Header)
	w.u32(m.From)
	if err := w.encShares(m.Shares, m.From, 0); err != nil {
		return nil, err
	}
	return w.b, nil
}

// UnmarshalBinary decodes the message; errors wrap ErrMalformed.
func (m *ShareKeys) UnmarshalBinary(b []byte) error {
	r, h := open(b, kindShareKeys, "share keys")
	from := r.id()
	shares := r.encShares(from, 0)
	if err := r.close("share keys"); err != nil {
		return err
	}
	*m = ShareKeys{Header: h, From: from, Shares: shares}
	return nil
}

// MarshalBinary encodes the message.
func (m *ShareDelivery) MarshalBinary() ([]byte, error) {
	w := newWriter(kindShareDelivery, m.Header)
	w.u32(m.To)
	if err := w.encShares(m.Shares, 0, m.To); err != nil {
		return nil, err
	}
	return w.b, nil
}

// UnmarshalBinary decodes the message; errors wrap ErrMalformed.
func (m *ShareDelivery) UnmarshalBinary(b []byte) error {
	r, h := open(b, kindShareDelivery, "share delivery")
	to := r.id()
	shares := r.encShares(0, to)
	if err := r.close("share delivery"); err != nil {
		return err
	}
	*m = ShareDelivery{Header: h, To: to, Shares: shares}
	return nil
}

// MarshalBinary encodes the message: Bits/8 bytes per element.
func (m *MaskedInput) MarshalBinary() ([]byte, error) {
	if m.Bits != 32 && m.Bits != 64 {
		return nil, fmt.Errorf("secagg: encode masked input: ring of %d bits: %w", m.Bits, ErrMalformed)
	}
	w := newWriter(kindMaskedInput, m.Header)
	w.u32(m.From)
	w.u8(m.Bits)
	w.u32(uint32(len(m.Y)))
	for _, v := range m.Y {
		if m.Bits == 32 {
			if v > 0xffffffff {
				return nil, fmt.Errorf("secagg: encode masked input: element %d over 32 bits: %w", v, ErrMalformed)
			}
			w.u32(uint32(v))
		} else {
			w.u64(v)
		}
	}
	return w.b, nil
}

// UnmarshalBinary decodes the message; errors wrap ErrMalformed.
func (m *MaskedInput) UnmarshalBinary(b []byte) error {
	r, h := open(b, kindMaskedInput, "masked input")
	from := r.id()
	k := r.u8()
	if r.err == nil && k != 32 && k != 64 {
		r.fail("ring of %d bits", k)
	}
	var y []uint64
	if r.err == nil {
		y = make([]uint64, r.count(MaxDim, int(k/8)))
		for i := range y {
			if k == 32 {
				y[i] = uint64(r.u32())
			} else {
				y[i] = r.u64()
			}
		}
	}
	if err := r.close("masked input"); err != nil {
		return err
	}
	*m = MaskedInput{Header: h, From: from, Bits: k, Y: y}
	return nil
}

// MarshalBinary encodes the message.
func (m *SurvivorList) MarshalBinary() ([]byte, error) {
	w := newWriter(kindSurvivors, m.Header)
	w.u32(uint32(len(m.Survivors)))
	for _, id := range m.Survivors {
		w.u32(id)
	}
	return w.b, nil
}

// UnmarshalBinary decodes the message; errors wrap ErrMalformed.
func (m *SurvivorList) UnmarshalBinary(b []byte) error {
	r, h := open(b, kindSurvivors, "survivor list")
	ids := r.ids(MaxClients)
	if err := r.close("survivor list"); err != nil {
		return err
	}
	*m = SurvivorList{Header: h, Survivors: ids}
	return nil
}

// MarshalBinary encodes the message.
func (m *ConsistencySig) MarshalBinary() ([]byte, error) {
	w := newWriter(kindConsistency, m.Header)
	w.u32(m.From)
	w.bytes(m.Sig[:])
	return w.b, nil
}

// UnmarshalBinary decodes the message; errors wrap ErrMalformed.
func (m *ConsistencySig) UnmarshalBinary(b []byte) error {
	r, h := open(b, kindConsistency, "consistency signature")
	out := ConsistencySig{Header: h, From: r.id()}
	r.fixed(out.Sig[:])
	if err := r.close("consistency signature"); err != nil {
		return err
	}
	*m = out
	return nil
}

// MarshalBinary encodes the message.
func (m *UnmaskRequest) MarshalBinary() ([]byte, error) {
	w := newWriter(kindUnmaskRequest, m.Header)
	for _, ids := range [][]uint32{m.Survivors, m.Dropped} {
		w.u32(uint32(len(ids)))
		for _, id := range ids {
			w.u32(id)
		}
	}
	w.u32(uint32(len(m.Sigs)))
	for _, s := range m.Sigs {
		w.u32(s.From)
		w.bytes(s.Sig[:])
	}
	return w.b, nil
}

// UnmarshalBinary decodes the message; errors wrap ErrMalformed. That a
// client is listed both as a survivor and as dropped is for the client
// to refuse (ErrSplitView), not the decoder.
func (m *UnmaskRequest) UnmarshalBinary(b []byte) error {
	r, h := open(b, kindUnmaskRequest, "unmask request")
	survivors := r.ids(MaxClients)
	dropped := r.ids(MaxClients)
	sigs := make([]Signature, r.count(MaxClients, 4+64))
	for i := range sigs {
		sigs[i].From = r.id()
		r.fixed(sigs[i].Sig[:])
		if i > 0 && sigs[i].From <= sigs[i-1].From && r.err == nil {
			r.fail("signatures not increasing at %d", i)
		}
	}
	if err := r.close("unmask request"); err != nil {
		return err
	}
	*m = UnmaskRequest{Header: h, Survivors: survivors, Dropped: dropped, Sigs: sigs}
	return nil
}

// MarshalBinary encodes the message.
func (m *UnmaskResponse) MarshalBinary() ([]byte, error) {
	w := newWriter(kindUnmaskResponse, m.Header)
	w.u32(m.From)
	for _, shares := range [][]Share{m.BShares, m.SShares} {
		w.u32(uint32(len(shares)))
		for _, s := range shares {
			w.u32(s.Of)
			w.share(s.Value)
		}
	}
	return w.b, nil
}

func (r *reader) shares() []Share {
	out := make([]Share, r.count(MaxClients, 4+2*chunks))
	for i := range out {
		out[i].Of = r.id()
		out[i].Value = r.share()
		if i > 0 && out[i].Of <= out[i-1].Of && r.err == nil {
			r.fail("shares not increasing at %d", i)
		}
	}
	return out
}

// UnmarshalBinary decodes the message; errors wrap ErrMalformed.
func (m *UnmaskResponse) UnmarshalBinary(b []byte) error {
	r, h := open(b, kindUnmaskResponse, "unmask response")
	from := r.id()
	bs := r.shares()
	ss := r.shares()
	if err := r.close("unmask response"); err != nil {
		return err
	}
	*m = UnmaskResponse{Header: h, From: from, BShares: bs, SShares: ss}
	return nil
}
