package secagg

import (
	"testing"
)

// FuzzClientStep feeds a client, at each step, whatever a malicious
// server sends (any bytes that decode as that step's message): the
// client never panics, and when it answers an unmasking request it never
// reveals both shares of one client, nor shares of a client outside the
// survivors it signed and its own view of the dropped.
func FuzzClientStep(f *testing.F) {
	// The consistency signatures depend only on the long-term keys, the
	// round and U3, so the sample's unmasking request is valid in the
	// fuzzed rounds, which use the same directory.
	dir, keys := identities(f, 4)
	s := sampleWith(f, dir, keys)
	for _, kind := range []byte{kindKeyList, kindShareDelivery, kindSurvivors, kindUnmaskRequest} {
		for _, b := range s[kind] {
			f.Add(b)
			c := append([]byte(nil), b...)
			c[len(c)-1] ^= 1
			f.Add(c)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		h := newHarness(t, testParams(4, 3, 6, 100, 1), dir, keys, seeded(t))
		h.drop[4] = stepMask // as in the sample round
		c := h.clients[1]
		steps := []func() error{h.step0, h.step1, h.step2, h.step3}
		var stop int
		switch b[0] {
		case kindKeyList:
			stop = 1
		case kindShareDelivery:
			stop = 2
		case kindSurvivors:
			stop = 3
		case kindUnmaskRequest:
			stop = 4
		default:
			return
		}
		for _, step := range steps[:stop] {
			must(t, step())
		}
		switch b[0] {
		case kindKeyList:
			var m KeyList
			if m.UnmarshalBinary(b) == nil {
				_, _ = c.ShareKeys(&m)
			}
		case kindShareDelivery:
			var m ShareDelivery
			if m.UnmarshalBinary(b) == nil {
				_, _ = c.MaskedInput(&m, h.inputs[1])
			}
		case kindSurvivors:
			var m SurvivorList
			if m.UnmarshalBinary(b) == nil {
				_, _ = c.Consistency(&m)
			}
		case kindUnmaskRequest:
			var m UnmaskRequest
			if m.UnmarshalBinary(b) != nil {
				return
			}
			resp, err := c.Unmask(&m)
			if err != nil {
				return
			}
			t.Logf("answered: %d self-mask shares, %d masking key shares", len(resp.BShares), len(resp.SShares))
			seen := map[uint32]bool{}
			for _, sh := range resp.BShares {
				if !member(c.u3, sh.Of) {
					t.Fatalf("self-mask share of client %d, not a survivor it signed", sh.Of)
				}
				seen[sh.Of] = true
			}
			for _, sh := range resp.SShares {
				if seen[sh.Of] {
					t.Fatalf("both shares of client %d revealed", sh.Of)
				}
				if member(c.u3, sh.Of) || !member(c.u2, sh.Of) {
					t.Fatalf("masking key share of client %d, not dropped in its view", sh.Of)
				}
			}
		}
	})
}
