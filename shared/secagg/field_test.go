package secagg

import (
	"math/rand/v2"
	"testing"
)

// TestField: GF(2^16) is a field (every non-zero element has an inverse,
// products distribute over sums), and any t of the shares of a secret
// give it back while t-1 of them, with the wrong points, do not.
func TestField(t *testing.T) {
	for a := 1; a <= MaxID; a++ {
		if got := gmul(uint16(a), ginv(uint16(a))); got != 1 {
			t.Fatalf("%#x times its inverse is %#x", a, got)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		a, b, c := uint16(rng.Uint32()), uint16(rng.Uint32()), uint16(rng.Uint32())
		if gmul(a, b^c) != gmul(a, b)^gmul(a, c) || gmul(a, b) != gmul(b, a) || gmul(gmul(a, b), c) != gmul(a, gmul(b, c)) {
			t.Fatalf("not a field at %#x, %#x, %#x", a, b, c)
		}
	}
	for _, tc := range []struct{ n, thr int }{{3, 2}, {10, 7}, {30, 21}, {300, 210}} {
		var secret [32]byte
		for i := range secret {
			secret[i] = byte(rng.Uint32())
		}
		xs := make([]uint32, tc.n)
		for i := range xs {
			xs[i] = uint32(MaxID - 3*i) // large points too
		}
		shares, err := splitSecret(secret, tc.thr, xs)
		must(t, err)
		for range 5 {
			perm := rng.Perm(tc.n)[:tc.thr]
			pts := make([]uint32, tc.thr)
			vals := make([]ShareValue, tc.thr)
			for i, j := range perm {
				pts[i], vals[i] = xs[j], shares[j]
			}
			if got := combine(lagrangeAtZero(pts), vals); got != secret {
				t.Fatalf("n=%d t=%d: %d shares give %x, want %x", tc.n, tc.thr, tc.thr, got, secret)
			}
			if got := combine(lagrangeAtZero(pts[:tc.thr-1]), vals[:tc.thr-1]); got == secret {
				t.Fatalf("n=%d t=%d: t-1 shares give the secret", tc.n, tc.thr)
			}
		}
	}
	if _, err := splitSecret([32]byte{}, 2, []uint32{1, MaxID + 1}); err == nil {
		t.Fatal("a share at a point beyond the field")
	}
	if _, err := splitSecret([32]byte{}, 3, []uint32{1, 2}); err == nil {
		t.Fatal("a threshold above the number of shares")
	}
}
