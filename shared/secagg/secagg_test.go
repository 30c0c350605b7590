package secagg

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func seeded(t testing.TB) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(len(t.Name())), 7))
}

// TestHonestSum: with every client answering, the server's output is the
// exact sum of all inputs, in both rings and at the ring's edge.
func TestHonestSum(t *testing.T) {
	for _, tc := range []struct {
		name      string
		n, thr, d int
		maxAbs    int64
		bits      int
	}{
		{"n=3", 3, 3, 1000, 1 << 20, 32},
		{"n=10", 10, 7, 1000, 1 << 20, 32},
		{"n=30", 30, 21, 1000, 1 << 20, 32},
		{"n=10 ring 64", 10, 7, 1000, 1 << 40, 64},
		{"n=3 edge of 32 bits", 3, 2, 64, (math.MaxInt32) / 3, 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, keys := identities(t, tc.n)
			p := testParams(tc.n, tc.thr, tc.d, tc.maxAbs, 1)
			if k := p.Bits(); k != tc.bits {
				t.Fatalf("ring of %d bits, want %d", k, tc.bits)
			}
			h := newHarness(t, p, dir, keys, seeded(t))
			if tc.name == "n=3 edge of 32 bits" {
				// The extreme sums: all at +maxAbs, all at -maxAbs.
				for i := range tc.d {
					for _, id := range h.ids {
						h.inputs[id][i] = tc.maxAbs * int64(1-2*(i%2))
					}
				}
			}
			got, err := h.run()
			if err != nil {
				t.Fatal(err)
			}
			if err := equalSums(got, h.plainSum(h.ids)); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(h.server.Included(), h.ids) {
				t.Fatalf("included %v, want every client", h.server.Included())
			}
			for id, err := range h.clientErr {
				t.Errorf("client %d refused: %v", id, err)
			}
		})
	}
}

// TestDropouts: clients that stop answering at any step, 30% of the
// cohort, still leave the exact sum of the inputs of U3 (the clients
// whose masked input the server holds), bit for bit.
func TestDropouts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n, thr  int
		step    int // the step at which the dropped clients stop
		dropped int
		inSum   bool // whether the dropped clients' inputs are in the sum
	}{
		{"after masked input n=10", 10, 7, stepConsistency, 3, true},
		{"after masked input n=30", 30, 21, stepConsistency, 9, true},
		{"after signing n=10", 10, 7, stepUnmask, 3, true},
		{"before masked input n=10", 10, 7, stepMask, 3, false},
		{"before masked input n=30", 30, 21, stepMask, 9, false},
		{"before sharing n=10", 10, 7, stepShare, 3, false},
		{"before advertising n=10", 10, 7, stepAdvertise, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, keys := identities(t, tc.n)
			h := newHarness(t, testParams(tc.n, tc.thr, 1000, 1<<20, 1), dir, keys, seeded(t))
			rng := seeded(t)
			perm := rng.Perm(tc.n)
			var kept, gone []uint32
			for i, j := range perm {
				if id := uint32(j + 1); i < tc.dropped {
					h.drop[id] = tc.step
					gone = append(gone, id)
				} else {
					kept = append(kept, id)
				}
			}
			slices.Sort(kept)
			got, err := h.run()
			if err != nil {
				t.Fatal(err)
			}
			want := kept
			if tc.inSum {
				want = h.ids
			}
			if !slices.Equal(h.server.Included(), want) {
				t.Fatalf("included %v, want %v (dropped %v)", h.server.Included(), want, gone)
			}
			if err := equalSums(got, h.plainSum(want)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestBelowThreshold: with fewer than t clients at any step the server
// refuses to go on, and a client refuses a step whose set the server cut
// below t: no sum is ever unmasked.
func TestBelowThreshold(t *testing.T) {
	const n, thr = 10, 7
	cut := func(s []uint32) []uint32 { return s[:thr-1] }
	for _, tc := range []struct {
		name string
		// drop: clients 1..4 stop at this step (server side), or -1.
		drop int
		// tamper sets a malicious server's hook.
		tamper func(h *harness)
	}{
		{name: "server: advertisements", drop: stepAdvertise},
		{name: "server: shares", drop: stepShare},
		{name: "server: masked inputs", drop: stepMask},
		{name: "server: signatures", drop: stepConsistency},
		{name: "server: unmask responses", drop: stepUnmask},
		{name: "client: key list", drop: -1, tamper: func(h *harness) {
			h.onKeyList = func(_ uint32, m *KeyList) { m.Clients = m.Clients[:thr-1] }
		}},
		{name: "client: share delivery", drop: -1, tamper: func(h *harness) {
			h.onDelivery = func(m *ShareDelivery) { m.Shares = m.Shares[:thr-2] }
		}},
		{name: "client: survivor list", drop: -1, tamper: func(h *harness) {
			h.onSurvivors = func(to uint32, m *SurvivorList) {
				m.Survivors = cut(m.Survivors)
				if !slices.Contains(m.Survivors, to) {
					m.Survivors = append(m.Survivors[:thr-2], to)
				}
			}
		}},
		{name: "client: signatures", drop: -1, tamper: func(h *harness) {
			h.onRequest = func(_ uint32, m *UnmaskRequest) { m.Sigs = m.Sigs[:thr-1] }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, keys := identities(t, n)
			h := newHarness(t, testParams(n, thr, 50, 1000, 1), dir, keys, seeded(t))
			if tc.drop >= 0 {
				for id := uint32(1); id <= n-thr+1; id++ {
					h.drop[id] = tc.drop
				}
			} else {
				tc.tamper(h)
			}
			sum, err := h.run()
			if sum != nil {
				t.Fatalf("a sum was unmasked below the threshold")
			}
			if !errors.Is(err, ErrBelowThreshold) {
				t.Fatalf("server: %v, want %v", err, ErrBelowThreshold)
			}
			if tc.drop < 0 {
				if len(h.clientErr) != n {
					t.Fatalf("%d clients refused, want all %d", len(h.clientErr), n)
				}
				for id, err := range h.clientErr {
					if !errors.Is(err, ErrBelowThreshold) {
						t.Errorf("client %d: %v, want %v", id, err, ErrBelowThreshold)
					}
				}
			}
		})
	}
}

// TestTampered: a changed ciphertext, signature or key is refused by the
// client that receives it.
func TestTampered(t *testing.T) {
	const n, thr = 5, 4
	for _, tc := range []struct {
		name   string
		tamper func(h *harness)
		want   error
	}{
		{"share ciphertext", func(h *harness) {
			h.onDelivery = func(m *ShareDelivery) { m.Shares[0].Ciphertext[3] ^= 1 }
		}, ErrDecrypt},
		{"share tag", func(h *harness) {
			h.onDelivery = func(m *ShareDelivery) { m.Shares[1].Ciphertext[CiphertextSize-1] ^= 0x80 }
		}, ErrDecrypt},
		{"share sent to another client", func(h *harness) {
			h.onDelivery = func(m *ShareDelivery) { m.Shares[0].From, m.Shares[1].From = m.Shares[1].From, m.Shares[0].From }
		}, ErrDecrypt},
		{"advertisement signature", func(h *harness) {
			h.onKeyList = func(_ uint32, m *KeyList) { m.Clients[2].Sig[5] ^= 4 }
		}, ErrSignature},
		{"advertised key replaced", func(h *harness) {
			h.onKeyList = func(_ uint32, m *KeyList) { m.Clients[3].SPub = m.Clients[2].SPub }
		}, ErrSignature},
		{"consistency signature", func(h *harness) {
			h.onRequest = func(_ uint32, m *UnmaskRequest) { m.Sigs[1].Sig[0] ^= 1 }
		}, ErrSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, keys := identities(t, n)
			h := newHarness(t, testParams(n, thr, 20, 1000, 1), dir, keys, seeded(t))
			tc.tamper(h)
			if _, err := h.run(); err == nil {
				t.Fatal("the round completed")
			}
			refused := 0
			for id, err := range h.clientErr {
				refused++
				if !errors.Is(err, tc.want) {
					t.Errorf("client %d: %v, want %v", id, err, tc.want)
				}
			}
			if refused < n-1 {
				t.Fatalf("%d clients refused, want at least %d", refused, n-1)
			}
		})
	}
}

// TestReplay: a message of another round (or session) is refused, by the
// server and by the client, whether its header is kept (ErrWrongRound) or
// rewritten (the signatures and keys cover the round: ErrSignature,
// ErrDecrypt).
func TestReplay(t *testing.T) {
	const n, thr = 4, 3
	dir, keys := identities(t, n)
	old := newHarness(t, testParams(n, thr, 8, 100, 1), dir, keys, seeded(t))
	if _, err := old.run(); err != nil {
		t.Fatal(err)
	}
	var oldAdv AdvertiseKeys
	var oldList KeyList
	var oldSurv SurvivorList
	var oldDelivery ShareDelivery
	for _, b := range old.seen {
		switch b[0] {
		case kindAdvertise:
			must(t, oldAdv.UnmarshalBinary(b))
		case kindKeyList:
			must(t, oldList.UnmarshalBinary(b))
		case kindSurvivors:
			must(t, oldSurv.UnmarshalBinary(b))
		case kindShareDelivery:
			must(t, oldDelivery.UnmarshalBinary(b))
		}
	}
	next := func() *harness { return newHarness(t, testParams(n, thr, 8, 100, 2), dir, keys, seeded(t)) }
	rewrite := func(h Header) Header { h.Round = 2; return h }
	for _, tc := range []struct {
		name string
		do   func(h *harness) error
		want error
	}{
		{"server: advertisement of round 1", func(h *harness) error { return h.server.ReceiveAdvertise(&oldAdv) }, ErrWrongRound},
		{"server: advertisement with its round rewritten", func(h *harness) error {
			m := oldAdv
			m.Header = rewrite(m.Header)
			return h.server.ReceiveAdvertise(&m)
		}, ErrSignature},
		{"client: key list of round 1", func(h *harness) error {
			must(t, h.step0())
			_, err := h.clients[1].ShareKeys(&oldList)
			return err
		}, ErrWrongRound},
		{"client: key list of another session", func(h *harness) error {
			must(t, h.step0())
			kl, err := h.server.KeyList()
			must(t, err)
			kl.Session[0] ^= 1
			_, err = h.clients[1].ShareKeys(kl)
			return err
		}, ErrWrongRound},
		{"client: key list with its round rewritten", func(h *harness) error {
			must(t, h.step0())
			m := oldList
			m.Header = rewrite(m.Header)
			_, err := h.clients[1].ShareKeys(&m)
			return err
		}, ErrSignature},
		{"client: share delivery of round 1", func(h *harness) error {
			must(t, h.step0())
			must(t, h.step1())
			_, err := h.clients[oldDelivery.To].MaskedInput(&oldDelivery, h.inputs[oldDelivery.To])
			return err
		}, ErrWrongRound},
		{"client: share delivery with its round rewritten", func(h *harness) error {
			must(t, h.step0())
			must(t, h.step1())
			m := oldDelivery
			m.Header = rewrite(m.Header)
			_, err := h.clients[m.To].MaskedInput(&m, h.inputs[m.To])
			return err
		}, ErrDecrypt},
		{"client: survivor list of round 1", func(h *harness) error {
			must(t, h.step0())
			must(t, h.step1())
			must(t, h.step2())
			_, err := h.clients[1].Consistency(&oldSurv)
			return err
		}, ErrWrongRound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(next()); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestStepOrder: a step called out of order or twice is refused, and a
// client that refused a step answers nothing more.
func TestStepOrder(t *testing.T) {
	dir, keys := identities(t, 3)
	h := newHarness(t, testParams(3, 2, 4, 10, 1), dir, keys, seeded(t))
	c := h.clients[1]
	if _, err := c.Consistency(&SurvivorList{}); !errors.Is(err, ErrState) {
		t.Fatalf("consistency first: %v", err)
	}
	if _, err := c.AdvertiseKeys(); !errors.Is(err, ErrState) {
		t.Fatalf("aborted client advertised: %v", err)
	}
	if _, err := h.server.Sum(); !errors.Is(err, ErrState) {
		t.Fatalf("sum first: %v", err)
	}
}

// TestRingBits: the ring is the smallest in which no sum of n inputs of
// magnitude maxAbs wraps, and such sums decode exactly at its edge.
func TestRingBits(t *testing.T) {
	for _, tc := range []struct {
		maxAbs int64
		n      int
		want   int
	}{
		{0, 1, 32},
		{math.MaxInt32, 1, 32},
		{math.MaxInt32 / 3, 3, 32},
		{math.MaxInt32/3 + 1, 3, 64},
		{1 << 30, 2, 64},
		{(1 << 30) - 1, 2, 32},
		{math.MaxInt64, 1, 64},
		{math.MaxInt64 / 300, 300, 64},
		{math.MaxInt64/300 + 1, 300, 0},
		{math.MaxInt64, 2, 0},
		{-1, 3, 0},
		{5, 0, 0},
	} {
		k, err := RingBits(tc.maxAbs, tc.n)
		if k != tc.want || (err == nil) != (tc.want != 0) {
			t.Errorf("RingBits(%d, %d) = %d, %v; want %d", tc.maxAbs, tc.n, k, err, tc.want)
		}
		if tc.want == 0 {
			if !errors.Is(err, ErrRange) {
				t.Errorf("RingBits(%d, %d): %v, want %v", tc.maxAbs, tc.n, err, ErrRange)
			}
			continue
		}
		// n inputs all at +maxAbs, then all at -maxAbs: summed in the ring
		// and decoded, exactly n*maxAbs.
		for _, sign := range []int64{1, -1} {
			var r uint64
			for range tc.n {
				r = (r + encode(sign*tc.maxAbs, k)) & ringMask(k)
			}
			if got := decode(r, k); got != sign*tc.maxAbs*int64(tc.n) {
				t.Errorf("ring %d: %d x %d decodes to %d", k, tc.n, sign*tc.maxAbs, got)
			}
		}
	}
}

// TestParams: parameters the protocol cannot keep its promises with are
// refused.
func TestParams(t *testing.T) {
	ok := testParams(10, 7, 5, 100, 1)
	must(t, ok.Validate())
	for name, p := range map[string]Params{
		"threshold half":     testParams(10, 5, 5, 100, 1),
		"threshold over n":   testParams(10, 11, 5, 100, 1),
		"one client":         testParams(1, 1, 5, 100, 1),
		"no dimension":       testParams(10, 7, 0, 100, 1),
		"ring overflow":      testParams(10, 7, 5, math.MaxInt64/2, 1),
		"too many clients":   testParams(MaxClients+1, MaxClients, 5, 1, 1),
		"negative magnitude": testParams(10, 7, 5, -1, 1),
	} {
		if err := p.Validate(); !errors.Is(err, ErrRange) {
			t.Errorf("%s: %v, want %v", name, err, ErrRange)
		}
	}
	dir, keys := identities(t, 3)
	if _, err := NewClient(testParams(3, 2, 5, 10, 1), 1, keys[2], dir); !errors.Is(err, ErrSignature) {
		t.Errorf("client with another's key: %v", err)
	}
	if _, err := NewClient(testParams(3, 2, 5, 10, 1), 4, keys[1], dir); !errors.Is(err, ErrUnknownClient) {
		t.Errorf("client not in the directory: %v", err)
	}
	dir[0] = dir[1]
	if _, err := NewServer(testParams(3, 2, 5, 10, 1), dir); !errors.Is(err, ErrUnknownClient) {
		t.Errorf("directory with id 0: %v", err)
	}
}
