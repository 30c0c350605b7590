package secagg

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
)

// Shamir secret sharing of 256-bit secrets over GF(2^16).
//
// A 32-byte secret is cut into 16 chunks of 16 bits, and each chunk is
// shared with its own random polynomial of degree t-1 over GF(2^16) =
// GF(2)[x]/(x^16 + x^5 + x^3 + x^2 + 1), evaluated at the clients' ids
// (1 to 65,535). Each chunk is perfectly hidden by any t-1 of its shares
// and the 16 polynomials are independent, so the 256-bit secret is as
// well: nothing is folded, all 256 bits come back from t shares. A share
// is as long as the secret, 32 bytes, the least Shamir sharing allows.
// Field products are computed without branches or tables on secret
// values.

// fieldPoly is the field's modulus without its x^16 term.
const fieldPoly = 0x002d

// chunks is the number of 16-bit chunks of a 32-byte secret.
const chunks = 16

// MaxID is the largest client id: ids are the points, in GF(2^16), at
// which the shares are evaluated.
const MaxID = 1<<16 - 1

// ShareValue is one client's share of one 32-byte secret: one field
// element per 16-bit chunk.
type ShareValue [chunks]uint16

// gmul is the product in GF(2^16), in constant time.
func gmul(a, b uint16) uint16 {
	var r uint16
	for i := range 16 {
		r ^= a & -(b >> i & 1)
		a = a<<1 ^ fieldPoly&-(a>>15)
	}
	return r
}

// ginv is a^(2^16-2), the inverse of a non-zero a.
func ginv(a uint16) uint16 {
	r := uint16(1)
	for range 15 { // a^(2^16-2) = a^(2+4+...+2^15)
		a = gmul(a, a)
		r = gmul(r, a)
	}
	return r
}

// splitSecret returns one share of secret for each of the evaluation
// points xs (client ids in [1, MaxID], distinct), any t of which
// reconstruct it and any t-1 of which say nothing about it.
func splitSecret(secret [32]byte, t int, xs []uint32) ([]ShareValue, error) {
	if t < 1 || t > len(xs) {
		return nil, fmt.Errorf("secagg: share among %d with threshold %d: %w", len(xs), t, ErrBelowThreshold)
	}
	// coef[c][0] is chunk c of the secret, coef[c][1:] random.
	random := make([]byte, 2*chunks*(t-1))
	rand.Read(random)
	coef := make([][]uint16, chunks)
	for c := range coef {
		coef[c] = make([]uint16, t)
		coef[c][0] = binary.BigEndian.Uint16(secret[2*c:])
		for j := 1; j < t; j++ {
			coef[c][j] = binary.BigEndian.Uint16(random[2*(c*(t-1)+j-1):])
		}
	}
	out := make([]ShareValue, len(xs))
	for i, x := range xs {
		if x == 0 || x > MaxID {
			return nil, fmt.Errorf("secagg: share at point %d, not in [1, %d]: %w", x, MaxID, ErrUnknownClient)
		}
		for c := range coef {
			acc := uint16(0)
			for j := t - 1; j >= 0; j-- {
				acc = gmul(acc, uint16(x)) ^ coef[c][j]
			}
			out[i][c] = acc
		}
	}
	return out, nil
}

// lagrangeAtZero returns the Lagrange coefficients that interpolate a
// polynomial's value at 0 from its values at xs (distinct, in [1, MaxID]).
func lagrangeAtZero(xs []uint32) []uint16 {
	l := make([]uint16, len(xs))
	for i, xi := range xs {
		num, den := uint16(1), uint16(1)
		for j, xj := range xs {
			if j == i {
				continue
			}
			num = gmul(num, uint16(xj))
			den = gmul(den, uint16(xj)^uint16(xi))
		}
		l[i] = gmul(num, ginv(den))
	}
	return l
}

// combine interpolates the secret from shares at the points whose
// coefficients are l.
func combine(l []uint16, shares []ShareValue) [32]byte {
	var secret [32]byte
	for c := range chunks {
		acc := uint16(0)
		for i, s := range shares {
			acc ^= gmul(l[i], s[c])
		}
		binary.BigEndian.PutUint16(secret[2*c:], acc)
	}
	return secret
}
