package wire

import (
	"encoding"
	"encoding/binary"
	"fmt"
	"math"

	"browserfl/shared/secagg"
)

// Secure aggregation frames (sessions of SharedNoiseAlgorithm).
//
// A shared-noise round runs the five steps of shared/secagg over binary
// frames of kind KindSecAgg:
//
//	offset size  field
//	0      8     header: magic "BF", version, kind KindSecAgg, round id T
//	8      1     step (one of the Step* constants)
//	9      4     body length n (uint32)
//	13     n     body
//
// The body of StepSetup is SecAggSetup's encoding (below); every other
// step's body is the encoding of the shared/secagg message of that step
// (its MarshalBinary), which carries its own kind byte, the secagg session
// id and the secagg round. A decoder accepts only the steps of its
// direction (DecodeSecAggToDevice, DecodeSecAggToCoordinator), decodes the
// body strictly with shared/secagg's decoders, and refuses a body whose
// secagg round is not of round T (SecAggRound). The frame must end
// exactly where its body ends.
//
// The steps, in order:
//
//	StepSetup       C->D  the round's secagg session, this device's id, the directory
//	StepAdvertise   D->C  secagg.AdvertiseKeys
//	StepKeyList     C->D  secagg.KeyList
//	StepShareKeys   D->C  secagg.ShareKeys
//	StepDelivery    C->D  secagg.ShareDelivery
//	StepMasked      D->C  secagg.MaskedInput (the only vector a device sends)
//	StepSurvivors   C->D  secagg.SurvivorList
//	StepSignature   D->C  secagg.ConsistencySig
//	StepUnmask      C->D  secagg.UnmaskRequest
//	StepUnmasked    D->C  secagg.UnmaskResponse

// KindSecAgg is the binary frame kind of the secure aggregation steps.
const KindSecAgg byte = 3

// The secure aggregation steps (the byte after a KindSecAgg frame's
// header).
const (
	StepSetup byte = 1 + iota
	StepAdvertise
	StepKeyList
	StepShareKeys
	StepDelivery
	StepMasked
	StepSurvivors
	StepSignature
	StepUnmask
	StepUnmasked
)

// SecAggFramesUp is the number of frames a device sends in one round of
// secure aggregation (advertise, shares, masked input, signature,
// unmasking), in place of a round's one update frame.
const SecAggFramesUp = 5

const secAggHdrLen = headerLen + 5

// SecAggMember is one entry of a round's directory: a device's secagg id
// and its long-term ed25519 public key (Hello.SignKey).
type SecAggMember struct {
	ID  uint32
	Key [32]byte
}

// SecAggSetup opens a round's secure aggregation at one device: the
// secagg session and round every message of the round carries, the
// device's own id in it, and the directory of the round's members, sorted
// by id.
type SecAggSetup struct {
	Session secagg.SessionID
	Round   uint64
	You     uint32
	Members []SecAggMember
}

// SecAggRound is the secagg round number of attempt a of round t: t in
// the high 32 bits, so that a device can check that a step belongs to the
// round it was asked, and the attempt in the low ones, so that a round run
// again under the same number (discarded, or after a restart) never
// reuses a (session, round) pair within a process.
func SecAggRound(t int, attempt uint32) uint64 { return uint64(t)<<32 | uint64(attempt) }

// SecAggFrame is a decoded secure aggregation frame of round T. Msg is
// one of *SecAggSetup, *secagg.AdvertiseKeys, *secagg.KeyList,
// *secagg.ShareKeys, *secagg.ShareDelivery, *secagg.MaskedInput,
// *secagg.SurvivorList, *secagg.ConsistencySig, *secagg.UnmaskRequest or
// *secagg.UnmaskResponse, as Step says.
type SecAggFrame struct {
	T    int
	Step byte
	Msg  any
}

// secAggStep returns the step of message m and whether it goes to the
// device.
func secAggStep(m any) (step byte, toDevice bool, ok bool) {
	switch m.(type) {
	case *SecAggSetup:
		return StepSetup, true, true
	case *secagg.AdvertiseKeys:
		return StepAdvertise, false, true
	case *secagg.KeyList:
		return StepKeyList, true, true
	case *secagg.ShareKeys:
		return StepShareKeys, false, true
	case *secagg.ShareDelivery:
		return StepDelivery, true, true
	case *secagg.MaskedInput:
		return StepMasked, false, true
	case *secagg.SurvivorList:
		return StepSurvivors, true, true
	case *secagg.ConsistencySig:
		return StepSignature, false, true
	case *secagg.UnmaskRequest:
		return StepUnmask, true, true
	case *secagg.UnmaskResponse:
		return StepUnmasked, false, true
	}
	return 0, false, false
}

// newSecAggMsg returns an empty message of step s.
func newSecAggMsg(s byte) any {
	switch s {
	case StepSetup:
		return new(SecAggSetup)
	case StepAdvertise:
		return new(secagg.AdvertiseKeys)
	case StepKeyList:
		return new(secagg.KeyList)
	case StepShareKeys:
		return new(secagg.ShareKeys)
	case StepDelivery:
		return new(secagg.ShareDelivery)
	case StepMasked:
		return new(secagg.MaskedInput)
	case StepSurvivors:
		return new(secagg.SurvivorList)
	case StepSignature:
		return new(secagg.ConsistencySig)
	case StepUnmask:
		return new(secagg.UnmaskRequest)
	case StepUnmasked:
		return new(secagg.UnmaskResponse)
	}
	return nil
}

// secAggHeader returns the secagg round a decoded message carries.
func secAggHeaderRound(m any) uint64 {
	switch m := m.(type) {
	case *SecAggSetup:
		return m.Round
	case *secagg.AdvertiseKeys:
		return m.Header.Round
	case *secagg.KeyList:
		return m.Header.Round
	case *secagg.ShareKeys:
		return m.Header.Round
	case *secagg.ShareDelivery:
		return m.Header.Round
	case *secagg.MaskedInput:
		return m.Header.Round
	case *secagg.SurvivorList:
		return m.Header.Round
	case *secagg.ConsistencySig:
		return m.Header.Round
	case *secagg.UnmaskRequest:
		return m.Header.Round
	case *secagg.UnmaskResponse:
		return m.Header.Round
	}
	return 0
}

// EncodeSecAgg encodes a secure aggregation message of round t.
func EncodeSecAgg(t int, m any) ([]byte, error) {
	step, _, ok := secAggStep(m)
	if !ok {
		return nil, bad("secagg: no step carries %T", m)
	}
	if t <= 0 || t > math.MaxUint32 {
		return nil, bad("round id %d out of range", t)
	}
	if r := secAggHeaderRound(m); r>>32 != uint64(t) {
		return nil, bad("secagg step %d of secagg round %#x in round %d", step, r, t)
	}
	var body []byte
	var err error
	if s, isSetup := m.(*SecAggSetup); isSetup {
		body, err = s.marshal()
	} else {
		body, err = m.(encoding.BinaryMarshaler).MarshalBinary()
	}
	if err != nil {
		return nil, bad("secagg step %d: %v", step, err)
	}
	if len(body) > math.MaxUint32 {
		return nil, bad("secagg body of %d bytes", len(body))
	}
	b := make([]byte, secAggHdrLen+len(body))
	putHeader(b, KindSecAgg, t)
	b[headerLen] = step
	binary.LittleEndian.PutUint32(b[headerLen+1:], uint32(len(body)))
	copy(b[secAggHdrLen:], body)
	return b, nil
}

// DecodeSecAggToDevice decodes a secure aggregation frame a device
// receives (the coordinator's steps) under lim.
func DecodeSecAggToDevice(b []byte, lim Limits) (SecAggFrame, error) {
	return decodeSecAgg(b, lim, true)
}

// DecodeSecAggToCoordinator decodes a secure aggregation frame the
// coordinator receives (a device's steps) under lim.
func DecodeSecAggToCoordinator(b []byte, lim Limits) (SecAggFrame, error) {
	return decodeSecAgg(b, lim, false)
}

func decodeSecAgg(b []byte, lim Limits, toDevice bool) (SecAggFrame, error) {
	if len(b) > lim.maxBytes() {
		return SecAggFrame{}, bad("frame of %d bytes exceeds limit %d", len(b), lim.maxBytes())
	}
	kind, t, err := PeekKind(b)
	if err != nil {
		return SecAggFrame{}, err
	}
	if kind != KindSecAgg {
		return SecAggFrame{}, bad("frame kind %d, want secagg", kind)
	}
	if len(b) < secAggHdrLen {
		return SecAggFrame{}, bad("secagg frame of %d bytes is shorter than its header", len(b))
	}
	step := b[headerLen]
	m := newSecAggMsg(step)
	if m == nil {
		return SecAggFrame{}, bad("unknown secagg step %d", step)
	}
	if _, down, _ := secAggStep(m); down != toDevice {
		return SecAggFrame{}, bad("secagg step %d in the wrong direction", step)
	}
	n := binary.LittleEndian.Uint32(b[headerLen+1:])
	if uint64(len(b)-secAggHdrLen) != uint64(n) {
		return SecAggFrame{}, bad("secagg body length %d, frame carries %d", n, len(b)-secAggHdrLen)
	}
	body := b[secAggHdrLen:]
	if s, isSetup := m.(*SecAggSetup); isSetup {
		err = s.unmarshal(body)
	} else {
		err = m.(encoding.BinaryUnmarshaler).UnmarshalBinary(body)
	}
	if err != nil {
		return SecAggFrame{}, bad("secagg step %d: %v", step, err)
	}
	if r := secAggHeaderRound(m); r>>32 != uint64(t) {
		return SecAggFrame{}, bad("secagg step %d of secagg round %#x in round %d", step, r, t)
	}
	return SecAggFrame{T: t, Step: step, Msg: m}, nil
}

// Setup encoding: session (16), round (8), you (4), count n (4), then n
// times id (4) and key (32); big-endian like shared/secagg's messages.
const setupMemberLen = 4 + 32

func (s *SecAggSetup) check() error {
	if len(s.Members) < 2 || len(s.Members) > secagg.MaxClients {
		return fmt.Errorf("setup of %d members, want 2 to %d", len(s.Members), secagg.MaxClients)
	}
	you := false
	for i, m := range s.Members {
		switch {
		case m.ID == 0 || m.ID > secagg.MaxID:
			return fmt.Errorf("setup member id %d not in [1, %d]", m.ID, secagg.MaxID)
		case i > 0 && m.ID <= s.Members[i-1].ID:
			return fmt.Errorf("setup member ids not increasing at %d", i)
		}
		you = you || m.ID == s.You
	}
	if !you {
		return fmt.Errorf("setup for id %d, not a member", s.You)
	}
	return nil
}

func (s *SecAggSetup) marshal() ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 32+setupMemberLen*len(s.Members))
	b = append(b, s.Session[:]...)
	b = binary.BigEndian.AppendUint64(b, s.Round)
	b = binary.BigEndian.AppendUint32(b, s.You)
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.Members)))
	for _, m := range s.Members {
		b = binary.BigEndian.AppendUint32(b, m.ID)
		b = append(b, m.Key[:]...)
	}
	return b, nil
}

func (s *SecAggSetup) unmarshal(b []byte) error {
	if len(b) < 32 {
		return fmt.Errorf("setup of %d bytes, shorter than its 32-byte head", len(b))
	}
	copy(s.Session[:], b)
	s.Round = binary.BigEndian.Uint64(b[16:])
	s.You = binary.BigEndian.Uint32(b[24:])
	n := binary.BigEndian.Uint32(b[28:])
	rest := b[32:]
	if n > secagg.MaxClients || uint64(n)*setupMemberLen != uint64(len(rest)) {
		return fmt.Errorf("setup of %d members in %d bytes", n, len(rest))
	}
	s.Members = make([]SecAggMember, n)
	for i := range s.Members {
		e := rest[i*setupMemberLen:]
		s.Members[i].ID = binary.BigEndian.Uint32(e)
		copy(s.Members[i].Key[:], e[4:setupMemberLen])
	}
	return s.check()
}

// SecAggFrameMax bounds every secure aggregation frame of a round of n
// devices, either way, but the masked input (an update's size, d ring
// elements, under the update frame's limit): the key list (133 bytes a
// device, the largest), a device's encrypted shares for the n - 1 others
// (84 bytes each), the unmask request and its answer, with 1 KiB for the
// heads; 256 bytes a device leave about twice that. A reader's frame
// limit below it cuts honest devices off (TestSecAggFrameMax).
func SecAggFrameMax(n int) int { return 1<<10 + 256*n }
