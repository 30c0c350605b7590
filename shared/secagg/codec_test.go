package secagg

import (
	"bytes"
	"crypto/ed25519"
	"encoding"
	"encoding/binary"
	"errors"
	"testing"
)

// sample returns the encoded messages of a small honest round with one
// client dropped before its masked input, by kind.
func sample(t testing.TB) map[byte][][]byte {
	dir, keys := identities(t, 4)
	return sampleWith(t, dir, keys)
}

func sampleWith(t testing.TB, dir Directory, keys map[uint32]ed25519.PrivateKey) map[byte][][]byte {
	h := newHarness(t, testParams(4, 3, 6, 100, 1), dir, keys, seeded(t))
	h.drop[4] = stepMask
	if _, err := h.run(); err != nil {
		t.Fatal(err)
	}
	out := map[byte][][]byte{}
	for _, b := range h.seen {
		out[b[0]] = append(out[b[0]], b)
	}
	return out
}

type codec interface {
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// messages returns a fresh message of each kind.
func messages() map[byte]func() codec {
	return map[byte]func() codec{
		kindAdvertise:      func() codec { return &AdvertiseKeys{} },
		kindKeyList:        func() codec { return &KeyList{} },
		kindShareKeys:      func() codec { return &ShareKeys{} },
		kindShareDelivery:  func() codec { return &ShareDelivery{} },
		kindMaskedInput:    func() codec { return &MaskedInput{} },
		kindSurvivors:      func() codec { return &SurvivorList{} },
		kindConsistency:    func() codec { return &ConsistencySig{} },
		kindUnmaskRequest:  func() codec { return &UnmaskRequest{} },
		kindUnmaskResponse: func() codec { return &UnmaskResponse{} },
	}
}

// TestDecodeRoundTrip: every message of a round decodes and encodes back
// to the same bytes.
func TestDecodeRoundTrip(t *testing.T) {
	s := sample(t)
	for kind, fresh := range messages() {
		if len(s[kind]) == 0 {
			t.Fatalf("no message of kind %d in the sample round", kind)
		}
		for _, b := range s[kind] {
			m := fresh()
			must(t, m.UnmarshalBinary(b))
			out, err := m.MarshalBinary()
			must(t, err)
			if !bytes.Equal(out, b) {
				t.Fatalf("kind %d: decoded and encoded again differs", kind)
			}
		}
	}
}

// TestDecodeRefuses: the decoders refuse, with ErrMalformed, every byte
// string the protocol does not allow.
func TestDecodeRefuses(t *testing.T) {
	s := sample(t)
	first := func(kind byte) []byte { return bytes.Clone(s[kind][0]) }
	const hdr = 2 + 16 + 8
	set32 := func(b []byte, at int, v uint32) []byte { binary.BigEndian.PutUint32(b[at:], v); return b }
	for _, tc := range []struct {
		name string
		kind byte
		b    []byte
	}{
		{"empty", kindAdvertise, nil},
		{"truncated header", kindAdvertise, first(kindAdvertise)[:hdr-1]},
		{"truncated body", kindAdvertise, first(kindAdvertise)[:hdr+10]},
		{"trailing byte", kindAdvertise, append(first(kindAdvertise), 0)},
		{"another kind", kindKeyList, first(kindAdvertise)},
		{"another version", kindAdvertise, func() []byte { b := first(kindAdvertise); b[1] = formatVersion + 1; return b }()},
		{"the previous version", kindAdvertise, func() []byte { b := first(kindAdvertise); b[1] = formatVersion - 1; return b }()},
		{"client id 0", kindAdvertise, set32(first(kindAdvertise), hdr, 0)},
		{"key list count over the bytes", kindKeyList, set32(first(kindKeyList), hdr, 5)},
		{"key list count over the limit", kindKeyList, set32(first(kindKeyList), hdr, MaxClients+1)},
		{"key list not increasing", kindKeyList, set32(first(kindKeyList), hdr+4+advertisementSize, 1)},
		{"share to itself", kindShareKeys, func() []byte {
			b := first(kindShareKeys)
			from := binary.BigEndian.Uint32(b[hdr:])
			return set32(b, hdr+8, from)
		}()},
		{"shares not increasing", kindShareKeys, func() []byte {
			b := first(kindShareKeys)
			return set32(b, hdr+8+encryptedShareSize, binary.BigEndian.Uint32(b[hdr+8:]))
		}()},
		{"delivery from its recipient", kindShareDelivery, func() []byte {
			b := first(kindShareDelivery)
			to := binary.BigEndian.Uint32(b[hdr:])
			return set32(b, hdr+8, to)
		}()},
		{"share id 0", kindShareDelivery, set32(first(kindShareDelivery), hdr+8, 0)},
		{"ring of 16 bits", kindMaskedInput, func() []byte { b := first(kindMaskedInput); b[hdr+4] = 16; return b }()},
		{"masked input too short", kindMaskedInput, first(kindMaskedInput)[:len(first(kindMaskedInput))-1]},
		{"survivor id 0", kindSurvivors, set32(first(kindSurvivors), hdr+4, 0)},
		{"survivors repeated", kindSurvivors, func() []byte {
			b := first(kindSurvivors)
			return set32(b, hdr+8, binary.BigEndian.Uint32(b[hdr+4:]))
		}()},
		{"client id over MaxID", kindConsistency, set32(first(kindConsistency), hdr, MaxID+1)},
		{"share id over MaxID", kindUnmaskResponse, set32(first(kindUnmaskResponse), hdr+4+4, MaxID+1)},
		{"signatures count over the bytes", kindUnmaskRequest, func() []byte {
			b := first(kindUnmaskRequest)
			return append(b[:len(b)-1], 0)[:len(b)-68]
		}()},
		{"consistency signature short", kindConsistency, first(kindConsistency)[:hdr+4+63]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := messages()[tc.kind]()
			if err := m.UnmarshalBinary(tc.b); !errors.Is(err, ErrMalformed) {
				t.Fatalf("got %v, want %v", err, ErrMalformed)
			}
		})
	}
}

// fuzzDecoder checks that a decoder never panics, refuses with
// ErrMalformed, and that what it accepts encodes back to the same bytes
// (one encoding per message).
func fuzzDecoder(f *testing.F, kind byte) {
	for _, b := range sample(f)[kind] {
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte{kind, formatVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		m := messages()[kind]()
		if err := m.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap %v", err, ErrMalformed)
			}
			return
		}
		out, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("accepted, then not encoded: %v", err)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("accepted %x, encodes to %x", b, out)
		}
	})
}

func FuzzAdvertiseKeys(f *testing.F)  { fuzzDecoder(f, kindAdvertise) }
func FuzzKeyList(f *testing.F)        { fuzzDecoder(f, kindKeyList) }
func FuzzShareKeys(f *testing.F)      { fuzzDecoder(f, kindShareKeys) }
func FuzzShareDelivery(f *testing.F)  { fuzzDecoder(f, kindShareDelivery) }
func FuzzMaskedInput(f *testing.F)    { fuzzDecoder(f, kindMaskedInput) }
func FuzzSurvivorList(f *testing.F)   { fuzzDecoder(f, kindSurvivors) }
func FuzzConsistencySig(f *testing.F) { fuzzDecoder(f, kindConsistency) }
func FuzzUnmaskRequest(f *testing.F)  { fuzzDecoder(f, kindUnmaskRequest) }
func FuzzUnmaskResponse(f *testing.F) { fuzzDecoder(f, kindUnmaskResponse) }
