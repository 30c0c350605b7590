package secagg

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Shamir secret sharing of 256-bit secrets.
//
// A 32-byte secret is cut into 8 chunks of 32 bits, and each chunk is
// shared with its own random polynomial of degree t-1 over GF(p), p =
// 2^61 - 1 (a Mersenne prime, so that products reduce with shifts and
// native 64-bit words, also in wasm). Each chunk is perfectly hidden by
// any t-1 of its shares and the 8 polynomials are independent, so the
// 256-bit secret is as well: nothing is folded, all 256 bits come back
// from t shares. A share is 8 field elements, 64 bytes.

// fieldP is the field's prime, 2^61 - 1.
const fieldP = 1<<61 - 1

// chunks is the number of 32-bit chunks of a 32-byte secret.
const chunks = 8

// ShareValue is one client's share of one 32-byte secret: one field
// element per 32-bit chunk, each below 2^61 - 1.
type ShareValue [chunks]uint64

func fadd(a, b uint64) uint64 {
	s := a + b
	if s >= fieldP {
		s -= fieldP
	}
	return s
}

func fsub(a, b uint64) uint64 {
	if a >= b {
		return a - b
	}
	return a + fieldP - b
}

func fmul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	// a*b < 2^122 = hi*2^64 + lo; split at bit 61.
	s := (lo & fieldP) + (lo>>61 | hi<<3)
	if s >= fieldP {
		s -= fieldP
	}
	return s
}

// finv is a^(p-2), the inverse of a non-zero a.
func finv(a uint64) uint64 {
	r, e := uint64(1), uint64(fieldP-2)
	for e > 0 {
		if e&1 == 1 {
			r = fmul(r, a)
		}
		a = fmul(a, a)
		e >>= 1
	}
	return r
}

// splitSecret returns one share of secret for each of the evaluation
// points xs (client ids, non-zero, distinct), any t of which reconstruct
// it and any t-1 of which say nothing about it.
func splitSecret(secret [32]byte, t int, xs []uint32) ([]ShareValue, error) {
	if t < 1 || t > len(xs) {
		return nil, fmt.Errorf("secagg: share among %d with threshold %d: %w", len(xs), t, ErrBelowThreshold)
	}
	// coef[c][0] is chunk c of the secret, coef[c][1:] random.
	coef := make([][]uint64, chunks)
	random := make([]byte, 8*chunks*(t-1))
	rand.Read(random)
	for c := range coef {
		coef[c] = make([]uint64, t)
		coef[c][0] = uint64(binary.BigEndian.Uint32(secret[4*c:]))
		for j := 1; j < t; j++ {
			v := binary.LittleEndian.Uint64(random[8*(c*(t-1)+j-1):]) & fieldP
			for v == fieldP { // probability 2^-61: draw again
				var b [8]byte
				rand.Read(b[:])
				v = binary.LittleEndian.Uint64(b[:]) & fieldP
			}
			coef[c][j] = v
		}
	}
	out := make([]ShareValue, len(xs))
	for i, x := range xs {
		if x == 0 {
			return nil, fmt.Errorf("secagg: share at point 0 would be the secret: %w", ErrUnknownClient)
		}
		for c := range coef {
			acc := uint64(0)
			for j := t - 1; j >= 0; j-- {
				acc = fadd(fmul(acc, uint64(x)), coef[c][j])
			}
			out[i][c] = acc
		}
	}
	return out, nil
}

// lagrangeAtZero returns the Lagrange coefficients that interpolate a
// polynomial's value at 0 from its values at xs (distinct, non-zero).
func lagrangeAtZero(xs []uint32) []uint64 {
	l := make([]uint64, len(xs))
	for i, xi := range xs {
		num, den := uint64(1), uint64(1)
		for j, xj := range xs {
			if j == i {
				continue
			}
			num = fmul(num, uint64(xj))
			den = fmul(den, fsub(uint64(xj), uint64(xi)))
		}
		l[i] = fmul(num, finv(den))
	}
	return l
}

// combine interpolates the secret from shares at the points whose
// coefficients are l. A chunk of 32 bits or more means the shares are
// not of one 32-byte secret.
func combine(l []uint64, shares []ShareValue) ([32]byte, error) {
	var secret [32]byte
	for c := range chunks {
		acc := uint64(0)
		for i, s := range shares {
			acc = fadd(acc, fmul(l[i], s[c]))
		}
		if acc > 0xffffffff {
			return secret, fmt.Errorf("secagg: interpolated chunk %d is not 32 bits: %w", c, ErrBadShare)
		}
		binary.BigEndian.PutUint32(secret[4*c:], uint32(acc))
	}
	return secret, nil
}

func (s ShareValue) valid() bool {
	for _, v := range s {
		if v >= fieldP {
			return false
		}
	}
	return true
}
