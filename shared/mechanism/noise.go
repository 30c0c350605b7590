package mechanism

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"

	"golang.org/x/crypto/chacha20"
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

// Seed is the 32-byte key of a ChaCha20 stream.
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

const streamBuf = 4096

// Stream is a deterministic pseudo-random stream: the ChaCha20 keystream
// (RFC 8439) under a 32-byte seed and a 96-bit nonce made of a purpose
// number. It implements io.Reader, so a Stream can itself be the entropy
// source of another component (the simulator's seed stream).
//
// A Stream is not safe for concurrent use. Its zero value is not usable;
// create it with NewStream.
type Stream struct {
	c    *chacha20.Cipher
	buf  [streamBuf]byte
	pos  int
	zero [streamBuf]byte
	// single random bits for the discrete sampler (see bit in
	// discrete.go)
	bits uint64
}

// NewStream returns the keystream of seed under the given purpose.
func NewStream(seed Seed, purpose uint32) *Stream {
	var nonce [chacha20.NonceSize]byte
	binary.LittleEndian.PutUint32(nonce[:4], purpose)
	c, err := chacha20.NewUnauthenticatedCipher(seed[:], nonce[:])
	if err != nil {
		// Key and nonce sizes are constants of this package.
		panic("mechanism: chacha20: " + err.Error())
	}
	s := &Stream{c: c}
	s.pos = streamBuf
	return s
}

// Reset rewinds s to the start of the keystream of seed and purpose,
// reusing its buffers (no allocation beyond the cipher state).
func (s *Stream) Reset(seed Seed, purpose uint32) {
	var nonce [chacha20.NonceSize]byte
	binary.LittleEndian.PutUint32(nonce[:4], purpose)
	c, err := chacha20.NewUnauthenticatedCipher(seed[:], nonce[:])
	if err != nil {
		panic("mechanism: chacha20: " + err.Error())
	}
	s.c = c
	s.pos = streamBuf
	s.bits = 0
}

func (s *Stream) refill() {
	s.c.XORKeyStream(s.buf[:], s.zero[:])
	s.pos = 0
}

// Read fills p with keystream bytes; it never fails.
func (s *Stream) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if s.pos == streamBuf {
			s.refill()
		}
		c := copy(p[n:], s.buf[s.pos:])
		s.pos += c
		n += c
	}
	return n, nil
}

// Uint64 returns the next 8 keystream bytes as a little-endian integer.
func (s *Stream) Uint64() uint64 {
	if s.pos+8 > streamBuf {
		if s.pos != streamBuf {
			// streamBuf is a multiple of 8 and every read of the buffer
			// except Read consumes 8 bytes; realign after a Read.
			var b [8]byte
			s.Read(b[:])
			return binary.LittleEndian.Uint64(b[:])
		}
		s.refill()
	}
	v := binary.LittleEndian.Uint64(s.buf[s.pos:])
	s.pos += 8
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
