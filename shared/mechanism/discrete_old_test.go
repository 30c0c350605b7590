package mechanism

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"golang.org/x/crypto/chacha20"
)

// refStream is the stream and exact discrete Gaussian sampler as they were
// before issue 12 (golang.org/x/crypto's ChaCha20 keystream, RFC 8439, and
// the sampler's bit-at-a-time Bernoulli trials), kept so the benchmarks
// time the product against it interleaved in one process
// (BenchmarkSamplersCPU) and the distribution tests can run it too.
type refStream struct {
	c    *chacha20.Cipher
	buf  [4096]byte
	pos  int
	zero [4096]byte
	bits uint64
}

func newRefStream(seed Seed, purpose uint32) *refStream {
	var nonce [chacha20.NonceSize]byte
	binary.LittleEndian.PutUint32(nonce[:4], purpose)
	c, err := chacha20.NewUnauthenticatedCipher(seed[:], nonce[:])
	if err != nil {
		panic(err)
	}
	return &refStream{c: c, pos: 4096}
}

func (s *refStream) Uint64() uint64 {
	if s.pos+8 > 4096 {
		s.c.XORKeyStream(s.buf[:], s.zero[:])
		s.pos = 0
	}
	v := binary.LittleEndian.Uint64(s.buf[s.pos:])
	s.pos += 8
	return v
}

func (s *refStream) fill(dst []int64, sigma int64) {
	for i := range dst {
		dst[i] = s.DiscreteGaussian(sigma)
	}
}

func (s *refStream) bit() uint64 {
	if s.bits <= 1 {
		s.refillBits()
	}
	b := s.bits & 1
	s.bits >>= 1
	return b
}

//go:noinline
func (s *refStream) refillBits() { s.bits = s.Uint64()>>1 | 1<<63 }

// take returns n keystream bits, 0 <= n <= 32 (the unused bits of the
// buffered word are dropped when fewer than n remain).
func (s *refStream) take(n uint) uint64 {
	if s.bits>>n == 0 {
		s.refillBits()
	}
	b := s.bits
	s.bits = b >> n
	return b &^ (^uint64(0) << n)
}

func (s *refStream) below(n uint64) uint64 {
	l := uint(bits.Len64(n - 1))
	for {
		if v := s.take(l); v < n {
			return v
		}
	}
}

func (s *refStream) bernRatio(num, den uint64) bool {
	if num >= den {
		return true
	}
	rem := num
	for rem != 0 {
		rem <<= 1
		var p uint64
		if rem >= den {
			p, rem = 1, rem-den
		}
		if s.bit() != p {
			return p == 1
		}
	}
	// num/den's expansion ended and U's bits equal it so far: U >= num/den.
	return false
}

func (s *refStream) bernExpRatio(num, den uint64) bool {
	if num == 0 {
		return true
	}
	k := uint64(1)
	for s.bernRatio(num, den) && (k == 1 || s.bernRatio(1, k)) {
		k++
	}
	return k%2 == 1
}

func (s *refStream) lessExp(u uint64, m int) bool {
	c := expTable[m]
	if u != c {
		return u < c
	}
	for n := 65; ; n++ {
		p := uint64(expNegFloor(int64(m), 2, n).Bit(0))
		if s.bit() != p {
			return p == 1
		}
	}
}

func (s *refStream) bernExpHalves(m uint64) bool {
	for m > expTableMax {
		if !s.uniformLessExp(expTableMax) {
			return false
		}
		m -= expTableMax
	}
	return m == 0 || s.uniformLessExp(int(m))
}

func (s *refStream) uniformLessExp(m int) bool {
	c := expTable[m]
	u := s.take(8)
	if u != c>>56 {
		return u < c>>56
	}
	return s.lessExp(u<<56|s.take(28)<<28|s.take(28), m)
}

func (s *refStream) DiscreteGaussian(sigma int64) int64 {
	if sigma < 1 || sigma > MaxDiscreteSigma {
		panic(fmt.Sprintf("mechanism: discrete Gaussian sigma %d outside [1, %d]", sigma, MaxDiscreteSigma))
	}
	sg := uint64(sigma)
	den := 2 * sg * sg // < 2^61
	for {
		// k = #{m >= 1 : U < exp(-m/2)} for one uniform U: P[k >= m] =
		// exp(-m/2); beyond the table, independent Bernoulli(exp(-1/2)).
		// U's bits are drawn lazily: the first 8 decide k through
		// kByPrefix unless they tie with a table entry's first 8 bits;
		// then the next 56 are drawn and the comparisons go on exactly.
		u8 := s.take(8)
		k := uint64(kByPrefix[u8])
		if k < expTableMax && u8 == expTable[k+1]>>56 {
			u := u8<<56 | s.take(28)<<28 | s.take(28)
			for k < expTableMax && s.lessExp(u, int(k)+1) {
				k++
			}
		}
		if k == expTableMax {
			for k <= maxK && s.bernExpHalves(1) {
				k++
			}
			if k > maxK {
				continue
			}
		}
		if k >= 2 && !s.bernExpHalves(k*(k-1)) {
			continue
		}
		j := s.below(sg)
		neg := s.bit() == 1
		if neg && k == 0 && j == 0 {
			continue
		}
		if !s.acceptKJ(k, j, sg, den) {
			continue
		}
		z := int64(k*sg + j)
		if neg {
			return -z
		}
		return z
	}
}

func (s *refStream) acceptKJ(k, j, sg, den uint64) bool {
	if k == 0 { // the common case: exp(-j^2 / (2 sigma^2)), below 1/2
		return s.bernExpRatio(j*j, den)
	}
	a := k * j // <= 2^60
	whole, r := a/sg, a%sg
	f := 2*sg*r + j*j // < 3 sigma^2 < 2^62
	if f >= den {
		whole++
		f -= den
	}
	for ; whole > 0; whole-- {
		if !s.uniformLessExp(2) { // exp(-1) = exp(-2/2)
			return false
		}
	}
	return s.bernExpRatio(f, den)
}
