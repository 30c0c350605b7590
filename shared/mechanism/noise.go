package mechanism

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
)

// Normal is a source of continuous standard normal draws (the ziggurat);
// *Stream implements it. The trusted server's noise and the simulator's
// synthetic data use it; device releases use the discrete Gaussian
// (discrete.go) instead, because the ziggurat's outputs lie on a lattice
// that can reveal what they are added to.
type Normal interface {
	NormFloat64() float64
	FillNormal(dst []float64, sigma float64)
	AddNormal(dst []float64, sigma float64)
}

var _ Normal = (*Stream)(nil)

// SeedSize is the size of a Stream key in bytes.
const SeedSize = 32

// Seed is the 32-byte secret from which a Stream is derived (one
// independent stream per purpose).
type Seed [SeedSize]byte

// NewSeed reads a fresh seed from r: crypto/rand.Reader in the product, a
// deterministic Stream in the simulator.
func NewSeed(r io.Reader) (Seed, error) {
	var s Seed
	if r == nil {
		return s, fmt.Errorf("mechanism: nil entropy source")
	}
	if _, err := io.ReadFull(r, s[:]); err != nil {
		return s, fmt.Errorf("mechanism: reading seed: %w", err)
	}
	return s, nil
}

// FreshStream reads a new seed from r (crypto/rand.Reader in the product)
// and returns the stream of that seed and purpose together with the seed,
// which is all a caller needs to store to regenerate the stream later.
func FreshStream(r io.Reader, purpose uint32) (*Stream, Seed, error) {
	seed, err := NewSeed(r)
	if err != nil {
		return nil, seed, err
	}
	return NewStream(seed, purpose), seed, nil
}

// Stream purposes: the nonce separates independent streams derived from the
// same seed (noise, compressor randomness, algorithm coin flips, derived
// seeds).
const (
	PurposeNoise    uint32 = 0
	PurposeCompress uint32 = 1
	PurposeCoins    uint32 = 2
	PurposeSeeds    uint32 = 3
)

// streamDomain separates this package's stream keys from any other use
// of the same seed.
const streamDomain = "browserfl/mechanism.Stream v2 purpose "

// Stream is a deterministic pseudo-random stream: the ChaCha8 generator
// of math/rand/v2 (the C2SP chacha8rand construction, a cryptographically
// strong generator whose output Go pins with golden tests: the same on
// every platform and Go release) keyed by HMAC-SHA256(seed, domain ||
// purpose), so each purpose of one 32-byte seed gets an independent
// stream. It implements io.Reader, so a Stream can itself be the entropy
// source of another component (the simulator's seed stream).
//
// Why ChaCha8 (BenchmarkGenerators, docs/performance.md): the noise must
// regenerate bit for bit from its seed on every platform (a device after a
// restart, the simulator, the coordinator's tests), so there is one
// generator for all of them, and ChaCha8 is the fastest cryptographic one
// both natively (assembly on amd64 and arm64: about 2x golang.org/x/crypto's
// ChaCha20, which was the stream before) and in WebAssembly (generic Go:
// AES-256-CTR, AES-NI natively, is several times slower there). Its eight
// rounds keep a margin over the best known attacks on reduced-round
// ChaCha (seven rounds).
//
// A Stream is not safe for concurrent use. Its zero value is not usable;
// create it with NewStream.
type Stream struct {
	c rand.ChaCha8
	// single random bits for the discrete sampler (see bit in
	// discrete.go)
	bits uint64
	// lw holds ln (0 to 7) stream bytes not yet consumed, low byte first,
	// left by a Read or a 32-bit draw that ended inside a word: every
	// reader takes them first, so the stream is one byte sequence
	// whatever the sizes of the reads.
	lw uint64
	ln uint
}

// streamKey is the ChaCha8 key of seed's stream for purpose.
func streamKey(seed Seed, purpose uint32) [32]byte {
	mac := hmac.New(sha256.New, seed[:])
	var msg [len(streamDomain) + 4]byte
	copy(msg[:], streamDomain)
	binary.LittleEndian.PutUint32(msg[len(streamDomain):], purpose)
	mac.Write(msg[:])
	var key [32]byte
	mac.Sum(key[:0])
	return key
}

// NewStream returns the stream of seed under the given purpose.
func NewStream(seed Seed, purpose uint32) *Stream {
	s := &Stream{}
	s.Reset(seed, purpose)
	return s
}

// Reset rewinds s to the start of the stream of seed and purpose, reusing
// its buffers.
func (s *Stream) Reset(seed Seed, purpose uint32) {
	s.c.Seed(streamKey(seed, purpose))
	s.bits = 0
	s.lw, s.ln = 0, 0
}

// Read fills p with stream bytes; it never fails.
func (s *Stream) Read(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && s.ln > 0 {
		p[0] = byte(s.lw)
		s.lw >>= 8
		s.ln--
		p = p[1:]
	}
	for len(p) >= 8 {
		binary.LittleEndian.PutUint64(p, s.c.Uint64())
		p = p[8:]
	}
	if len(p) > 0 {
		w := s.c.Uint64()
		for i := range p {
			p[i] = byte(w)
			w >>= 8
		}
		s.lw, s.ln = w, uint(8-len(p))
	}
	return n, nil
}

// Uint64 returns the next 8 stream bytes as a little-endian integer.
func (s *Stream) Uint64() uint64 {
	if s.ln == 0 {
		return s.c.Uint64()
	}
	return s.uint64Split()
}

// uint64Split is Uint64 when ln bytes of a word are left over.
func (s *Stream) uint64Split() uint64 {
	w := s.c.Uint64()
	sh := 8 * s.ln & 63 // 8 to 56
	v := s.lw | w<<sh
	s.lw = w >> (64 - sh)
	return v
}

// uint32 returns the next 4 stream bytes as a little-endian integer.
func (s *Stream) uint32() uint32 {
	switch {
	case s.ln >= 4:
		v := uint32(s.lw)
		s.lw >>= 32
		s.ln -= 4
		return v
	case s.ln == 0:
		w := s.c.Uint64()
		s.lw, s.ln = w>>32, 4
		return uint32(w)
	}
	w := s.c.Uint64()
	sh := 8 * s.ln & 31 // 8 to 24
	v := uint32(s.lw | w<<sh)
	s.lw, s.ln = w>>(32-sh), s.ln+4
	return v
}

// Float64 returns a uniform number in the open interval (0, 1): the top 53
// bits of a Uint64 plus one half, times 2^-53.
func (s *Stream) Float64() float64 {
	return (float64(s.Uint64()>>11) + 0.5) * (1.0 / (1 << 53))
}

// Intn returns a uniform integer in [0, n) for n > 0 (Lemire's
// multiply-and-reject method: exactly uniform).
func (s *Stream) Intn(n int) int {
	if n <= 0 {
		panic("mechanism: Intn with n <= 0")
	}
	un := uint64(n)
	hi, lo := bits.Mul64(s.Uint64(), un)
	if lo < un {
		thresh := -un % un
		for lo < thresh {
			hi, lo = bits.Mul64(s.Uint64(), un)
		}
	}
	return int(hi)
}

// NormFloat64 returns one standard normal (the same generator as
// FillNormal).
func (s *Stream) NormFloat64() float64 { return s.zigNormal() }

// FillNormal sets dst[i] = sigma * z_i for i.i.d. standard normals z_i
// drawn by the ziggurat method (ziggurat.go). It does not allocate.
func (s *Stream) FillNormal(dst []float64, sigma float64) {
	for i := range dst {
		dst[i] = sigma * s.zigNormal()
	}
}

// AddNormal adds sigma * z_i to dst[i] with the same draws as FillNormal.
func (s *Stream) AddNormal(dst []float64, sigma float64) {
	for i := range dst {
		dst[i] += sigma * s.zigNormal()
	}
}

// NoiseVector writes the continuous (ziggurat) Gaussian vector
// N(0, sigma^2 I) determined by seed into dst, using a fresh stream of
// PurposeNoise. Device releases use DiscreteNoiseVector instead.
func NoiseVector(dst []float64, seed Seed, sigma float64, scratch *Stream) {
	if scratch == nil {
		scratch = NewStream(seed, PurposeNoise)
	} else {
		scratch.Reset(seed, PurposeNoise)
	}
	scratch.FillNormal(dst, sigma)
}

// NCState is the noise-cancellation state of one device (noise-cancellation
// paper, Algorithm 1): its last noise Y_i, a discrete Gaussian vector in
// grid units, stored as the seed that regenerates it together with its
// integer sigma and the dimension, and its participation count N_i. The
// zero value is the initial state (Y_i = 0, N_i = 0).
type NCState struct {
	N     int   // participations so far (N_i)
	Has   bool  // false while Y_i = 0
	Seed  Seed  // seed of Y_i
	Sigma int64 // discrete sigma of Y_i, grid units
	Dim   int   // dimension of Y_i
}

// Y writes Y_i (grid units) into dst (len(dst) must equal Dim when Has,
// any length when not: then dst is zeroed).
func (st *NCState) Y(dst []int64, scratch *Stream) error {
	if !st.Has {
		for i := range dst {
			dst[i] = 0
		}
		return nil
	}
	if len(dst) != st.Dim {
		return fmt.Errorf("mechanism: Y_i has dimension %d, buffer %d", st.Dim, len(dst))
	}
	DiscreteNoiseVector(dst, st.Seed, st.Sigma, scratch)
	return nil
}
