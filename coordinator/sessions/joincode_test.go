package sessions

import (
	"math"
	"strings"
	"testing"
)

// TestRandomJoinCode: codes use the alphabet only, the alphabet has no
// look-alikes, and every character is equally likely: over 62,000
// characters each of the 31 is expected 2,000 times (sd 44); a count
// more than 6 sd away fails (false failure about 1e-8 for the whole
// test). A modulo without the rejection of bytes 248-255 would give the
// first 8 characters 2,180 and the rest 1,938 on average, a chi-square
// near 175; the limit below, 70 for 30 degrees of freedom, is passed by a
// fair draw with probability 1 - 5e-5 and by the biased one with a
// probability far below 1e-6.
func TestRandomJoinCode(t *testing.T) {
	if strings.ContainsAny(JoinCodeAlphabet, "0O1IL") || len(JoinCodeAlphabet) != 31 {
		t.Fatalf("alphabet %q has look-alikes or is not 31 characters", JoinCodeAlphabet)
	}
	counts := map[rune]int{}
	for range 6200 {
		c, err := RandomJoinCode(10)
		if err != nil || len(c) != 10 {
			t.Fatalf("RandomJoinCode = %q, %v", c, err)
		}
		for _, r := range c {
			if !strings.ContainsRune(JoinCodeAlphabet, r) {
				t.Fatalf("code %q has %q, not in the alphabet", c, r)
			}
			counts[r]++
		}
	}
	chi := 0.0
	for _, r := range JoinCodeAlphabet {
		d := float64(counts[r]) - 2000
		if math.Abs(d) > 6*44.2 {
			t.Errorf("%q drawn %d times, want about 2000", r, counts[r])
		}
		chi += d * d / 2000
	}
	if chi > 70 {
		t.Errorf("chi-square %.1f over 30 degrees of freedom: the characters are not equally likely", chi)
	}
}
