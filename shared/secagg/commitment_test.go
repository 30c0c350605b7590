package secagg

import (
	"bytes"
	"errors"
	"testing"
)

// TestCommitment: the self-mask seed's commitment reaches the server
// signed (a changed commitment or signature is refused) and no client
// (the key list carries none); a wrong share of a survivor's seed gives
// ErrBadShare, never a wrong sum.
func TestCommitment(t *testing.T) {
	const n, thr = 5, 3
	dir, keys := identities(t, n)
	p := testParams(n, thr, 20, 1000, 1)
	c, err := NewClient(p, 2, keys[2], dir)
	must(t, err)
	adv, err := c.AdvertiseKeys()
	must(t, err)
	for _, tc := range []struct {
		name   string
		tamper func(m *AdvertiseKeys)
	}{
		{"commitment", func(m *AdvertiseKeys) { m.Commit[7] ^= 1 }},
		{"commitment signature", func(m *AdvertiseKeys) { m.CommitSig[9] ^= 1 }},
		{"commitment of another client", func(m *AdvertiseKeys) {
			other, err := NewClient(p, 3, keys[3], dir)
			must(t, err)
			o, err := other.AdvertiseKeys()
			must(t, err)
			m.Commit, m.CommitSig = o.Commit, o.CommitSig
		}},
	} {
		srv, err := NewServer(p, dir)
		must(t, err)
		m := *adv
		tc.tamper(&m)
		if err := srv.ReceiveAdvertise(&m); !errors.Is(err, ErrSignature) {
			t.Errorf("%s changed: %v, want %v", tc.name, err, ErrSignature)
		}
	}
	srv, err := NewServer(p, dir)
	must(t, err)
	must(t, srv.ReceiveAdvertise(adv))

	h := newHarness(t, p, dir, keys, seeded(t))
	if _, err := h.run(); err != nil {
		t.Fatal(err)
	}
	var commits [][32]byte
	for _, b := range h.seen {
		if b[0] == kindAdvertise {
			var m AdvertiseKeys
			must(t, m.UnmarshalBinary(b))
			commits = append(commits, m.Commit)
		}
	}
	for _, b := range h.seen {
		for _, c := range commits {
			if b[0] == kindKeyList && bytes.Contains(b, c[:]) {
				t.Fatal("the key list carries a commitment")
			}
		}
	}
	if len(commits) != n {
		t.Fatalf("%d commitments seen, want %d", len(commits), n)
	}

	h = newHarness(t, p, dir, keys, seeded(t))
	h.onResponse = func(m *UnmaskResponse) {
		if m.From == 1 { // among the first t responders, whose shares Sum uses
			m.BShares[2].Value[0] ^= 1
		}
	}
	if sum, err := h.run(); !errors.Is(err, ErrBadShare) || sum != nil {
		t.Fatalf("a wrong self-mask seed share: sum %v, error %v, want %v", sum != nil, err, ErrBadShare)
	}
}

// TestUnmaskRequestSignatures: the unmasking request carries the
// signatures of t of the signers, not all of them, and every signer gets
// it and answers.
func TestUnmaskRequestSignatures(t *testing.T) {
	const n, thr = 10, 7
	dir, keys := identities(t, n)
	h := newHarness(t, testParams(n, thr, 20, 1000, 1), dir, keys, seeded(t))
	var got []int
	h.onRequest = func(_ uint32, m *UnmaskRequest) { got = append(got, len(m.Sigs)) }
	sum, err := h.run()
	if err != nil {
		t.Fatal(err)
	}
	if err := equalSums(sum, h.plainSum(h.ids)); err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d clients got the request, want the %d signers", len(got), n)
	}
	for _, k := range got {
		if k != thr {
			t.Fatalf("a request with %d signatures, want the threshold %d", k, thr)
		}
	}
}

// TestShareKeyPerDirection: the key and nonce of the shares u sends v
// differ from those of v's to u (the two agree on one secret) and from
// another round's: a (key, nonce) pair encrypts one message.
func TestShareKeyPerDirection(t *testing.T) {
	shared := bytes.Repeat([]byte{5}, 32)
	h := Header{Session: SessionID{1}, Round: 1}
	h2 := Header{Session: SessionID{1}, Round: 2}
	var b, s ShareValue
	seal := func(h Header, from, to uint32) [CiphertextSize]byte {
		c, err := shareAEAD(h, shared, from, to)
		must(t, err)
		return sealShares(c, h, from, to, b, s)
	}
	// The same plaintext sealed under one (key, nonce) pair and the same
	// associated data would give the same bytes; the associated data
	// differ here too, so compare the keystreams: the ciphertexts' first
	// 64 bytes XOR the plaintext (zero).
	uv, vu, next := seal(h, 1, 2), seal(h, 2, 1), seal(h2, 1, 2)
	if bytes.Equal(uv[:plainShareSize], vu[:plainShareSize]) {
		t.Fatal("u to v and v to u share a key and nonce")
	}
	if bytes.Equal(uv[:plainShareSize], next[:plainShareSize]) {
		t.Fatal("two rounds share a key and nonce")
	}
	if again := seal(h, 1, 2); !bytes.Equal(uv[:], again[:]) {
		t.Fatal("the shares' cipher is not a function of the round and the ids")
	}
}
