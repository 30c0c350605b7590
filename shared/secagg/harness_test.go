package secagg

import (
	"crypto/ed25519"
	"encoding"
	"fmt"
	"math/rand/v2"
	"testing"
)

// harness runs one round between a Server and Clients through the
// binary encodings, recording every byte the server receives or sends
// (what a curious server, or anyone on the bus, sees).
type harness struct {
	tb      testing.TB
	p       Params
	dir     Directory
	keys    map[uint32]ed25519.PrivateKey
	ids     []uint32
	clients map[uint32]*Client
	server  *Server
	inputs  map[uint32][]int64
	// drop[id] is the step at which client id stops answering (it sends
	// that step's message no more).
	drop map[uint32]int
	// seen is every encoded message to or from the server.
	seen [][]byte
	// clientErr is the first error of each client that refused a step.
	clientErr map[uint32]error
	// Hooks change what a client receives (a malicious server), after
	// decoding.
	onKeyList   func(to uint32, m *KeyList)
	onDelivery  func(m *ShareDelivery)
	onSurvivors func(to uint32, m *SurvivorList)
	onRequest   func(to uint32, m *UnmaskRequest)
	// onResponse changes what the server receives (a malicious client).
	onResponse func(m *UnmaskResponse)
	// clock is called around every call of a client's step (benchmarks).
	clock func(id uint32, on bool)
}

// identities returns a directory of n clients, ids 1..n, and their keys.
func identities(tb testing.TB, n int) (Directory, map[uint32]ed25519.PrivateKey) {
	dir := Directory{}
	keys := map[uint32]ed25519.PrivateKey{}
	for i := 1; i <= n; i++ {
		pub, priv, err := ed25519.GenerateKey(nil)
		if err != nil {
			tb.Fatal(err)
		}
		dir[uint32(i)], keys[uint32(i)] = pub, priv
	}
	return dir, keys
}

func testParams(n, t, dim int, maxAbs int64, round uint64) Params {
	return Params{Session: SessionID{1, 2, 3}, Round: round, Threshold: t, MaxClients: n, Dim: dim, MaxAbs: maxAbs}
}

// newHarness sets up a round of the n clients of dir with random inputs
// in [-maxAbs, maxAbs].
func newHarness(tb testing.TB, p Params, dir Directory, keys map[uint32]ed25519.PrivateKey, rng *rand.Rand) *harness {
	h := &harness{tb: tb, p: p, dir: dir, keys: keys, clients: map[uint32]*Client{}, inputs: map[uint32][]int64{},
		drop: map[uint32]int{}, clientErr: map[uint32]error{}}
	var err error
	if h.server, err = NewServer(p, dir); err != nil {
		tb.Fatal(err)
	}
	for id := uint32(1); int(id) <= len(dir); id++ {
		h.ids = append(h.ids, id)
		if h.clients[id], err = NewClient(p, id, keys[id], dir); err != nil {
			tb.Fatal(err)
		}
		x := make([]int64, p.Dim)
		for i := range x {
			x[i] = rng.Int64N(2*p.MaxAbs+1) - p.MaxAbs
		}
		h.inputs[id] = x
	}
	return h
}

// carry encodes src, records it and decodes it into dst.
func (h *harness) carry(src encoding.BinaryMarshaler, dst encoding.BinaryUnmarshaler) {
	h.tb.Helper()
	b, err := src.MarshalBinary()
	if err != nil {
		h.tb.Fatalf("encode %T: %v", src, err)
	}
	h.seen = append(h.seen, b)
	if err := dst.UnmarshalBinary(b); err != nil {
		h.tb.Fatalf("decode %T: %v", dst, err)
	}
}

func (h *harness) answers(id uint32, step int) bool {
	s, ok := h.drop[id]
	return (!ok || step < s) && h.clientErr[id] == nil
}

func (h *harness) tick(id uint32, on bool) {
	if h.clock != nil {
		h.clock(id, on)
	}
}

func (h *harness) refused(id uint32, err error) { h.clientErr[id] = err }

// run plays every step and returns the server's sum, or the first error
// of the server (a client's refusal only leaves it out).
func (h *harness) run() ([]int64, error) {
	for _, step := range []func() error{h.step0, h.step1, h.step2, h.step3, h.step4} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return h.server.Sum()
}

func (h *harness) step0() error {
	for _, id := range h.ids {
		if !h.answers(id, stepAdvertise) {
			continue
		}
		h.tick(id, true)
		m, err := h.clients[id].AdvertiseKeys()
		h.tick(id, false)
		if err != nil {
			h.refused(id, err)
			continue
		}
		var got AdvertiseKeys
		h.carry(m, &got)
		if err := h.server.ReceiveAdvertise(&got); err != nil {
			return err
		}
	}
	return nil
}

func (h *harness) step1() error {
	kl, err := h.server.KeyList()
	if err != nil {
		return err
	}
	for _, a := range kl.Clients {
		id := a.Client
		if !h.answers(id, stepShare) {
			continue
		}
		var got KeyList
		h.carry(kl, &got)
		if h.onKeyList != nil {
			h.onKeyList(id, &got)
		}
		h.tick(id, true)
		m, err := h.clients[id].ShareKeys(&got)
		h.tick(id, false)
		if err != nil {
			h.refused(id, err)
			continue
		}
		var sent ShareKeys
		h.carry(m, &sent)
		if err := h.server.ReceiveShares(&sent); err != nil {
			return err
		}
	}
	return nil
}

func (h *harness) step2() error {
	ds, err := h.server.Deliveries()
	if err != nil {
		return err
	}
	for _, d := range ds {
		id := d.To
		if !h.answers(id, stepMask) {
			continue
		}
		var got ShareDelivery
		h.carry(d, &got)
		if h.onDelivery != nil {
			h.onDelivery(&got)
		}
		h.tick(id, true)
		m, err := h.clients[id].MaskedInput(&got, h.inputs[id])
		h.tick(id, false)
		if err != nil {
			h.refused(id, err)
			continue
		}
		var sent MaskedInput
		h.carry(m, &sent)
		if err := h.server.ReceiveMasked(&sent); err != nil {
			return err
		}
	}
	return nil
}

func (h *harness) step3() error {
	sl, err := h.server.SurvivorList()
	if err != nil {
		return err
	}
	for _, id := range sl.Survivors {
		if !h.answers(id, stepConsistency) {
			continue
		}
		var got SurvivorList
		h.carry(sl, &got)
		if h.onSurvivors != nil {
			h.onSurvivors(id, &got)
		}
		h.tick(id, true)
		m, err := h.clients[id].Consistency(&got)
		h.tick(id, false)
		if err != nil {
			h.refused(id, err)
			continue
		}
		var sent ConsistencySig
		h.carry(m, &sent)
		if err := h.server.ReceiveConsistency(&sent); err != nil {
			return err
		}
	}
	return nil
}

func (h *harness) step4() error {
	req, err := h.server.UnmaskRequest()
	if err != nil {
		return err
	}
	for _, id := range h.server.Signers() {
		if !h.answers(id, stepUnmask) {
			continue
		}
		var got UnmaskRequest
		h.carry(req, &got)
		if h.onRequest != nil {
			h.onRequest(id, &got)
		}
		h.tick(id, true)
		m, err := h.clients[id].Unmask(&got)
		h.tick(id, false)
		if err != nil {
			h.refused(id, err)
			continue
		}
		var sent UnmaskResponse
		h.carry(m, &sent)
		if h.onResponse != nil {
			h.onResponse(&sent)
		}
		if err := h.server.ReceiveUnmask(&sent); err != nil {
			return err
		}
	}
	return nil
}

// plainSum is the sum of the inputs of ids, computed in the clear.
func (h *harness) plainSum(ids []uint32) []int64 {
	out := make([]int64, h.p.Dim)
	for _, id := range ids {
		for i, v := range h.inputs[id] {
			out[i] += v
		}
	}
	return out
}

func equalSums(got, want []int64) error {
	if len(got) != len(want) {
		return fmt.Errorf("sum of %d elements, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("element %d is %d, want %d", i, got[i], want[i])
		}
	}
	return nil
}
