package secagg

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
)

// Domain separation: every derivation, signature and commitment starts
// with its own label and the session and round.
const (
	labelSalt        = "browserfl/secagg/v1 salt"
	labelPairwise    = "browserfl/secagg/v1 pairwise mask"
	labelShareKey    = "browserfl/secagg/v1 share encryption"
	labelAdvertise   = "browserfl/secagg/v1 advertise keys"
	labelCommitment  = "browserfl/secagg/v1 advertise commitment"
	labelConsistency = "browserfl/secagg/v1 consistency"
	labelCommit      = "browserfl/secagg/v1 self-mask commitment"
	labelShareAAD    = "browserfl/secagg/v1 share"
)

// SeedSize is the size of every seed and key: 256 bits.
const SeedSize = 32

// An encrypted share is the b-share and the s-share (32 bytes each)
// encrypted, and the GCM tag. Its nonce is not sent: it is derived with
// its key, which encrypts this one message (shareAEAD).
const (
	nonceSize      = 12
	plainShareSize = 2 * 2 * chunks
	// CiphertextSize is the size of one encrypted pair of shares.
	CiphertextSize = plainShareSize + 16
)

func (h Header) bytes() []byte {
	b := make([]byte, 0, len(h.Session)+8)
	b = append(b, h.Session[:]...)
	return binary.BigEndian.AppendUint64(b, h.Round)
}

// salt is the HKDF salt of a round: its session and number.
func (h Header) salt() []byte { return append([]byte(labelSalt), h.bytes()...) }

func appendIDs(b []byte, ids ...uint32) []byte {
	for _, id := range ids {
		b = binary.BigEndian.AppendUint32(b, id)
	}
	return b
}

// agree is the X25519 agreement of priv with the peer's public key pub.
func agree(priv *ecdh.PrivateKey, pub [32]byte) ([]byte, error) {
	pk, err := ecdh.X25519().NewPublicKey(pub[:])
	if err != nil {
		return nil, fmt.Errorf("secagg: public key: %w: %w", ErrMalformed, err)
	}
	shared, err := priv.ECDH(pk)
	if err != nil {
		return nil, fmt.Errorf("secagg: key agreement: %w: %w", ErrMalformed, err)
	}
	return shared, nil
}

// pairwiseSeed derives s_uv, the 32-byte seed of the mask that clients u
// and v add and subtract, from their agreed secret, the round and both
// ids (ordered, so both derive the same seed).
func pairwiseSeed(h Header, priv *ecdh.PrivateKey, peerPub [32]byte, u, v uint32) ([SeedSize]byte, error) {
	var seed [SeedSize]byte
	shared, err := agree(priv, peerPub)
	if err != nil {
		return seed, err
	}
	lo, hi := min(u, v), max(u, v)
	key, err := hkdf.Key(sha256.New, shared, h.salt(), labelPairwise+string(appendIDs(nil, lo, hi)), SeedSize)
	if err != nil {
		return seed, fmt.Errorf("secagg: pairwise seed: %w", err)
	}
	copy(seed[:], key)
	return seed, nil
}

// shareCipher is the AES-256-GCM of the shares one client sends another
// in one round, and the nonce of that one message.
type shareCipher struct {
	aead  cipher.AEAD
	nonce []byte
}

// shareAEAD is the cipher of the shares that from sends to, keyed from
// shared, their agreement on the encryption keys: one key per direction.
// The key and the nonce are derived together: the key is fresh for each
// (session, round, from, to), since the encryption key pairs are drawn
// anew every round and the ids and round are in the derivation, and it
// encrypts one message (a client shares its keys once a round), so a
// nonce fixed by the key is never used twice with it.
func shareAEAD(h Header, shared []byte, from, to uint32) (shareCipher, error) {
	okm, err := hkdf.Key(sha256.New, shared, h.salt(), labelShareKey+string(appendIDs(nil, from, to)), SeedSize+nonceSize)
	if err != nil {
		return shareCipher{}, fmt.Errorf("secagg: share key: %w", err)
	}
	block, err := aes.NewCipher(okm[:SeedSize])
	if err != nil {
		return shareCipher{}, fmt.Errorf("secagg: share cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return shareCipher{}, fmt.Errorf("secagg: share cipher: %w", err)
	}
	return shareCipher{aead: aead, nonce: okm[SeedSize:]}, nil
}

func shareAAD(h Header, from, to uint32) []byte {
	return appendIDs(append([]byte(labelShareAAD), h.bytes()...), from, to)
}

// sealShares encrypts the b-share and s-share that from sends to.
func sealShares(c shareCipher, h Header, from, to uint32, b, s ShareValue) [CiphertextSize]byte {
	plain := make([]byte, 0, plainShareSize)
	for _, v := range b {
		plain = binary.BigEndian.AppendUint16(plain, v)
	}
	for _, v := range s {
		plain = binary.BigEndian.AppendUint16(plain, v)
	}
	var out [CiphertextSize]byte
	c.aead.Seal(out[:0], c.nonce, plain, shareAAD(h, from, to))
	return out
}

// openShares decrypts what from sent to.
func openShares(c shareCipher, h Header, from, to uint32, ct [CiphertextSize]byte) (b, s ShareValue, err error) {
	plain, err := c.aead.Open(nil, c.nonce, ct[:], shareAAD(h, from, to))
	if err != nil {
		return b, s, fmt.Errorf("secagg: share from client %d: %w", from, ErrDecrypt)
	}
	for c := range chunks {
		b[c] = binary.BigEndian.Uint16(plain[2*c:])
		s[c] = binary.BigEndian.Uint16(plain[2*(chunks+c):])
	}
	return b, s, nil
}

// commitSelfSeed is the commitment to client id's self-mask seed that
// its AdvertiseKeys carries to the server: the server checks the seed it
// reconstructs against it. SHA-256 of a uniform 256-bit seed tells
// nothing about it.
func commitSelfSeed(h Header, id uint32, seed [SeedSize]byte) [32]byte {
	b := append([]byte(labelCommit), h.bytes()...)
	b = appendIDs(b, id)
	return sha256.Sum256(append(b, seed[:]...))
}

// advertiseSigned is what a client's advertisement signature covers: its
// round keys, with the session, round and its id. Every client checks it.
func advertiseSigned(h Header, a *Advertisement) []byte {
	b := append([]byte(labelAdvertise), h.bytes()...)
	b = appendIDs(b, a.Client)
	b = append(b, a.CPub[:]...)
	return append(b, a.SPub[:]...)
}

// commitmentSigned is what a client's commitment signature covers: its
// round keys and its self-mask seed's commitment, with the session, round
// and its id. The server checks it: only the server uses the commitment.
func commitmentSigned(h Header, a *Advertisement, commit [32]byte) []byte {
	b := append([]byte(labelCommitment), h.bytes()...)
	b = appendIDs(b, a.Client)
	b = append(b, a.CPub[:]...)
	b = append(b, a.SPub[:]...)
	return append(b, commit[:]...)
}

func consistencySigned(h Header, survivors []uint32) []byte {
	b := append([]byte(labelConsistency), h.bytes()...)
	b = appendIDs(b, uint32(len(survivors)))
	return appendIDs(b, survivors...)
}

func verify(pub ed25519.PublicKey, msg []byte, sig [64]byte) bool {
	return len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, msg, sig[:])
}

// addMask adds (or, with neg, subtracts) the mask that seed expands to,
// modulo 2^k, into acc. The mask is the ChaCha8 stream keyed with all 32
// bytes of the seed: one 64-bit word per element in Z_(2^64), one word
// per two elements in Z_(2^32).
func addMask(acc []uint64, seed [SeedSize]byte, k int, neg bool) {
	prg := mrand.NewChaCha8(seed)
	mask := ringMask(k)
	if k == 64 {
		for i := range acc {
			m := prg.Uint64()
			if neg {
				m = -m
			}
			acc[i] += m
		}
		return
	}
	for i := 0; i < len(acc); i += 2 {
		w := prg.Uint64()
		lo, hi := w&mask, w>>32
		if neg {
			lo, hi = -lo, -hi
		}
		acc[i] = (acc[i] + lo) & mask
		if i+1 < len(acc) {
			acc[i+1] = (acc[i+1] + hi) & mask
		}
	}
}
