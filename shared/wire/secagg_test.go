package wire

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"browserfl/shared/secagg"
)

// secAggRound runs a complete secagg round of three clients for round t
// and returns one message of every step, as EncodeSecAgg takes them.
func secAggRound(tb testing.TB, t int) []any { return secAggRoundOf(tb, t, 3) }

// secAggRoundOf is secAggRound with n clients (threshold 2, or 70% of
// them): the messages are client 1's and those sent to it.
func secAggRoundOf(tb testing.TB, t, n int) []any {
	tb.Helper()
	p := secagg.Params{Session: secagg.SessionID{7}, Round: SecAggRound(t, 2), Threshold: max(2, 7*n/10), MaxClients: n, Dim: 4, MaxAbs: 100}
	dir := secagg.Directory{}
	keys := map[uint32]ed25519.PrivateKey{}
	setup := &SecAggSetup{Session: p.Session, Round: p.Round, You: 2}
	for id := uint32(1); id <= uint32(n); id++ {
		pub, priv, _ := ed25519.GenerateKey(nil)
		dir[id], keys[id] = pub, priv
		setup.Members = append(setup.Members, SecAggMember{ID: id, Key: [32]byte(pub)})
	}
	srv, err := secagg.NewServer(p, dir)
	if err != nil {
		tb.Fatal(err)
	}
	cs := map[uint32]*secagg.Client{}
	var out []any
	out = append(out, setup)
	for id := uint32(1); id <= uint32(n); id++ {
		if cs[id], err = secagg.NewClient(p, id, keys[id], dir); err != nil {
			tb.Fatal(err)
		}
		a, err := cs[id].AdvertiseKeys()
		if err != nil || srv.ReceiveAdvertise(a) != nil {
			tb.Fatal(err)
		}
		if id == 1 {
			out = append(out, a)
		}
	}
	kl, err := srv.KeyList()
	if err != nil {
		tb.Fatal(err)
	}
	out = append(out, kl)
	for id := uint32(1); id <= uint32(n); id++ {
		s, err := cs[id].ShareKeys(kl)
		if err != nil || srv.ReceiveShares(s) != nil {
			tb.Fatal(err)
		}
		if id == 1 {
			out = append(out, s)
		}
	}
	ds, err := srv.Deliveries()
	if err != nil {
		tb.Fatal(err)
	}
	out = append(out, ds[0])
	for i := range n {
		id := uint32(i + 1)
		m, err := cs[id].MaskedInput(ds[i], []int64{1, -2, 3, int64(id)})
		if err != nil || srv.ReceiveMasked(m) != nil {
			tb.Fatal(err)
		}
		if id == 1 {
			out = append(out, m)
		}
	}
	sl, err := srv.SurvivorList()
	if err != nil {
		tb.Fatal(err)
	}
	out = append(out, sl)
	for id := uint32(1); id <= uint32(n); id++ {
		s, err := cs[id].Consistency(sl)
		if err != nil || srv.ReceiveConsistency(s) != nil {
			tb.Fatal(err)
		}
		if id == 1 {
			out = append(out, s)
		}
	}
	ur, err := srv.UnmaskRequest()
	if err != nil {
		tb.Fatal(err)
	}
	out = append(out, ur)
	r, err := cs[1].Unmask(ur)
	if err != nil {
		tb.Fatal(err)
	}
	return append(out, r)
}

func TestSecAggRoundTrip(t *testing.T) {
	msgs := secAggRound(t, 5)
	if len(msgs) != int(StepUnmasked) {
		t.Fatalf("%d messages, want one per step (%d)", len(msgs), StepUnmasked)
	}
	for i, m := range msgs {
		b, err := EncodeSecAgg(5, m)
		if err != nil {
			t.Fatalf("encode %T: %v", m, err)
		}
		step, down, _ := secAggStep(m)
		if step != byte(i+1) {
			t.Errorf("%T is step %d, want %d", m, step, i+1)
		}
		dec := DecodeSecAggToCoordinator
		other := DecodeSecAggToDevice
		if down {
			dec, other = other, dec
		}
		f, err := dec(b, Limits{})
		if err != nil {
			t.Fatalf("decode %T: %v", m, err)
		}
		again, err := EncodeSecAgg(f.T, f.Msg)
		if f.T != 5 || f.Step != step || reflect.TypeOf(f.Msg) != reflect.TypeOf(m) || err != nil || string(again) != string(b) {
			t.Errorf("round trip of %T: got %+v (%v)", m, f, err)
		}
		if _, err := other(b, Limits{}); !errors.Is(err, ErrBadFrame) {
			t.Errorf("%T decoded in the wrong direction: %v", m, err)
		}
		if _, err := dec(b, Limits{MaxBytes: len(b) - 1}); !errors.Is(err, ErrBadFrame) {
			t.Errorf("%T over the size limit: %v", m, err)
		}
		// A step of another round: the frame's round and the secagg
		// header disagree.
		wrong := append([]byte(nil), b...)
		binary.LittleEndian.PutUint32(wrong[4:], 6)
		if _, err := dec(wrong, Limits{}); !errors.Is(err, ErrBadFrame) {
			t.Errorf("%T of secagg round 5 in frame round 6: %v", m, err)
		}
		if _, err := EncodeSecAgg(6, m); !errors.Is(err, ErrBadFrame) {
			t.Errorf("%T encoded in the wrong round: %v", m, err)
		}
		for _, cut := range []int{1, secAggHdrLen - len(b), 0} {
			if cut <= 0 {
				continue
			}
			if _, err := dec(b[:len(b)-cut], Limits{}); !errors.Is(err, ErrBadFrame) {
				t.Errorf("%T cut by %d bytes: %v", m, cut, err)
			}
		}
		if _, err := dec(append(append([]byte(nil), b...), 0), Limits{}); !errors.Is(err, ErrBadFrame) {
			t.Errorf("%T with a byte more: %v", m, err)
		}
		if _, err := DecodeUpdate(b, Limits{}); !errors.Is(err, ErrBadFrame) {
			t.Errorf("%T read as an update: %v", m, err)
		}
	}
}

func TestSecAggRefuses(t *testing.T) {
	msgs := secAggRound(t, 5)
	setup := *msgs[0].(*SecAggSetup)
	good, err := EncodeSecAgg(5, &setup)
	if err != nil {
		t.Fatal(err)
	}
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := []struct {
		name string
		b    []byte
	}{
		{"unknown step", mod(func(b []byte) []byte { b[headerLen] = StepUnmasked + 1; return b })},
		{"step 0", mod(func(b []byte) []byte { b[headerLen] = 0; return b })},
		{"body length", mod(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[headerLen+1:], 1); return b })},
		{"you not a member", mod(func(b []byte) []byte { binary.BigEndian.PutUint32(b[secAggHdrLen+24:], 9); return b })},
		{"member id 0", mod(func(b []byte) []byte { binary.BigEndian.PutUint32(b[secAggHdrLen+32:], 0); return b })},
		{"members unsorted", mod(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[secAggHdrLen+32+setupMemberLen:], 1)
			return b
		})},
		{"member count", mod(func(b []byte) []byte { binary.BigEndian.PutUint32(b[secAggHdrLen+28:], 4); return b })},
		{"huge member count", mod(func(b []byte) []byte { binary.BigEndian.PutUint32(b[secAggHdrLen+28:], 1<<31); return b })},
		{"round 0", mod(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], 0); return b })},
		{"header only", good[:secAggHdrLen-1]},
	}
	for _, c := range cases {
		if _, err := DecodeSecAggToDevice(c.b, Limits{}); !errors.Is(err, ErrBadFrame) {
			t.Errorf("%s: err = %v, want ErrBadFrame", c.name, err)
		}
	}
	one := setup
	one.Members = one.Members[:1]
	one.You = one.Members[0].ID
	if _, err := EncodeSecAgg(5, &one); !errors.Is(err, ErrBadFrame) {
		t.Errorf("setup of one member encoded: %v", err)
	}
	if _, err := EncodeSecAgg(5, struct{}{}); !errors.Is(err, ErrBadFrame) {
		t.Errorf("a message of no step encoded: %v", err)
	}
}

func TestHelloSignKey(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(nil)
	h := Hello{Version: 1, JoinCode: "x", SignKey: "AAAA"}
	if _, ok := h.SignKeyBytes(); ok {
		t.Error("a 3-byte key accepted")
	}
	b, _ := EncodeControl(h)
	if _, err := DecodeControl(b); !errors.Is(err, ErrBadFrame) {
		t.Errorf("hello with a short sign key: %v", err)
	}
	var k [32]byte
	copy(k[:], pub)
	h.SignKey = encodeKey(k)
	b, _ = EncodeControl(h)
	m, err := DecodeControl(b)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := m.(Hello).SignKeyBytes(); !ok || got != k {
		t.Errorf("sign key %x, ok %v; want %x", got, ok, k)
	}
}

// FuzzDecodeSecAgg feeds arbitrary bytes to both secagg decoders: none
// may panic, whatever decodes re-encodes to the same bytes, and the
// decoded message is of the frame's round and of the decoder's
// direction.
func FuzzDecodeSecAgg(f *testing.F) {
	for _, m := range secAggRound(f, 3) {
		b, err := EncodeSecAgg(3, m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("BF\x01\x03\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, down := range []bool{true, false} {
			dec := DecodeSecAggToCoordinator
			if down {
				dec = DecodeSecAggToDevice
			}
			fr, err := dec(b, Limits{MaxBytes: 1 << 16})
			if err != nil {
				if !errors.Is(err, ErrBadFrame) {
					t.Fatalf("error %v does not wrap ErrBadFrame", err)
				}
				continue
			}
			step, d, ok := secAggStep(fr.Msg)
			if !ok || step != fr.Step || d != down || secAggHeaderRound(fr.Msg)>>32 != uint64(fr.T) {
				t.Fatalf("decoded %T as step %d (down %v) of round %d", fr.Msg, fr.Step, down, fr.T)
			}
			again, err := EncodeSecAgg(fr.T, fr.Msg)
			if err != nil || string(again) != string(b) {
				t.Fatalf("%T does not re-encode: %v", fr.Msg, err)
			}
		}
	})
}

func encodeKey(k [32]byte) string { return base64.StdEncoding.EncodeToString(k[:]) }

// TestSecAggFrameMax: every secure aggregation frame of a round of n
// devices but the masked input (an update's size) fits
// SecAggFrameMax(n), the limit the coordinator and the devices read
// with, and the largest grows by at most 256 bytes a device (the key
// list: 133); a bound of an update's size, 16 d + 1 KiB, fails at n = 16
// for d = 15 (the class TestSharedNoiseLargeClass runs).
func TestSecAggFrameMax(t *testing.T) {
	for _, n := range []int{3, 16, 40} {
		largest := 0
		for _, m := range secAggRoundOf(t, 5, n) {
			if _, ok := m.(*secagg.MaskedInput); ok {
				continue
			}
			b, err := EncodeSecAgg(5, m)
			if err != nil {
				t.Fatalf("n = %d: encode %T: %v", n, m, err)
			}
			if len(b) > SecAggFrameMax(n) {
				t.Errorf("n = %d: %T is a %d-byte frame, over SecAggFrameMax = %d", n, m, len(b), SecAggFrameMax(n))
			}
			largest = max(largest, len(b))
		}
		t.Logf("n = %d: largest frame %d bytes, bound %d", n, largest, SecAggFrameMax(n))
		if update := 16*15 + 1024; n == 16 && largest <= update {
			t.Errorf("n = 16: the largest frame, %d bytes, fits an update's limit at d = 15 (%d): not the case this bound is for", largest, update)
		}
	}
}
