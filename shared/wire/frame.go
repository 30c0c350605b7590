package wire

import (
	"encoding/binary"
	"math"
)

// Binary frame layout (all integers little-endian):
//
//	offset size  field
//	0      2     magic "BF"
//	2      1     version (1)
//	3      1     kind (KindRound or KindUpdate)
//	4      4     round id T (uint32, >= 1)
//
// KindRound continues with
//
//	8      4     deadline in milliseconds from receipt (uint32)
//	12     4     dim d (uint32)
//	16     1     flags (bit 0: XPrev present; bit 1: XPrev is the X of
//	             round T-1's frame, sent before on this connection, and not
//	             in this frame; never both)
//	17     4d    X as float32
//	17+4d  4d    XPrev as float32 (only if flag bit 0)
//
// KindUpdate continues with
//
//	8      4     payload length n (uint32)
//	12     n     payload (an encoding of shared/mechanism; opaque here)
//
// The frame must end exactly where its fields end.

// Frame kinds.
const (
	KindRound  byte = 1
	KindUpdate byte = 2
)

const (
	headerLen      = 8
	roundHeaderLen = headerLen + 9
	updateHdrLen   = headerLen + 4
	flagXPrev      = 1
	flagPrevIsLast = 2
)

// MaxDim bounds the dimension of any vector on the wire (16M coordinates).
const MaxDim = 1 << 24

// Limits bound what a decoder accepts. The zero value accepts any
// dimension up to MaxDim and frames up to DefaultMaxFrame bytes.
type Limits struct {
	// MaxBytes is the largest frame accepted; 0 means DefaultMaxFrame.
	MaxBytes int
	// Dim, if > 0, is the only dimension a round assignment may have.
	Dim int
}

// DefaultMaxFrame is the frame size limit when Limits.MaxBytes is 0.
const DefaultMaxFrame = 4 << 20

func (l Limits) maxBytes() int {
	if l.MaxBytes > 0 {
		return l.MaxBytes
	}
	return DefaultMaxFrame
}

// RoundFrame is a round assignment: the query points of round T.
type RoundFrame struct {
	T              int
	DeadlineMillis int
	X              []float64
	XPrev          []float64 // nil when the algorithm does not use it
	// PrevIsLast, on a frame without XPrev, says that x_{t-1} is the X of
	// round T-1's frame, which the coordinator sent on this connection
	// just before: a device that keeps the last round's X (Hello.KeepsX)
	// uses it, and one that does not hold it reconnects (a new connection
	// gets whole frames). It halves the bytes down for devices sampled in
	// consecutive rounds (every round, when the cohort is the class).
	PrevIsLast bool
}

// UpdateFrame is a device's update for round T.
type UpdateFrame struct {
	T       int
	Payload []byte
}

// RoundFrameLen is the length in bytes of a round frame of dimension d:
// the header and X, and XPrev when withXPrev. It is the one statement of
// the layout's size; whoever sizes a round frame (a read limit, a byte
// count) calls it.
func RoundFrameLen(d int, withXPrev bool) int {
	if withXPrev {
		return roundHeaderLen + 8*d
	}
	return roundHeaderLen + 4*d
}

// UpdateFrameLen is the length in bytes of an update frame carrying a
// payload of n bytes.
func UpdateFrameLen(n int) int { return updateHdrLen + n }

func putHeader(b []byte, kind byte, t int) {
	b[0], b[1], b[2], b[3] = 'B', 'F', Version, kind
	binary.LittleEndian.PutUint32(b[4:], uint32(t))
}

// EncodeRound encodes r. It returns an error for a round id outside
// [1, 2^32), mismatched lengths or non-finite coordinates; coordinates are
// rounded to float32.
func EncodeRound(r RoundFrame) ([]byte, error) {
	d := len(r.X)
	switch {
	case r.T <= 0 || r.T > math.MaxUint32:
		return nil, bad("round id %d out of range", r.T)
	case d == 0 || d > MaxDim:
		return nil, bad("dim %d out of range", d)
	case r.XPrev != nil && len(r.XPrev) != d:
		return nil, bad("len(XPrev) = %d, len(X) = %d", len(r.XPrev), d)
	case r.DeadlineMillis < 0 || r.DeadlineMillis > math.MaxUint32:
		return nil, bad("deadline %d ms out of range", r.DeadlineMillis)
	case r.PrevIsLast && r.XPrev != nil:
		return nil, bad("a frame with XPrev cannot say XPrev is the last X")
	}
	b := make([]byte, RoundFrameLen(d, r.XPrev != nil))
	putHeader(b, KindRound, r.T)
	binary.LittleEndian.PutUint32(b[8:], uint32(r.DeadlineMillis))
	binary.LittleEndian.PutUint32(b[12:], uint32(d))
	if r.XPrev != nil {
		b[16] = flagXPrev
	}
	if r.PrevIsLast {
		b[16] = flagPrevIsLast
	}
	if err := putFloats(b[roundHeaderLen:], r.X); err != nil {
		return nil, err
	}
	if r.XPrev != nil {
		if err := putFloats(b[roundHeaderLen+4*d:], r.XPrev); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// ShortRound returns round frame full without its XPrev and with
// PrevIsLast set (a new slice; full is not changed), or nil if full does
// not have the layout of a round frame carrying XPrev (its values are not
// checked: full comes from EncodeRound). The coordinator and the edges send it to
// a connection that was sent round T-1's frame just before.
func ShortRound(full []byte) []byte {
	if len(full) < roundHeaderLen || full[0] != 'B' || full[1] != 'F' || full[2] != Version || full[3] != KindRound || full[16] != flagXPrev {
		return nil
	}
	d := int(binary.LittleEndian.Uint32(full[12:]))
	if d <= 0 || d > MaxDim || len(full) != RoundFrameLen(d, true) {
		return nil
	}
	short := append([]byte(nil), full[:RoundFrameLen(d, false)]...)
	short[16] = flagPrevIsLast
	return short
}

func putFloats(dst []byte, x []float64) error {
	for i, v := range x {
		f := float32(v)
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return bad("coordinate %d is %v (as float32)", i, f)
		}
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(f))
	}
	return nil
}

// EncodeUpdate encodes u.
func EncodeUpdate(u UpdateFrame) ([]byte, error) {
	if u.T <= 0 || u.T > math.MaxUint32 {
		return nil, bad("round id %d out of range", u.T)
	}
	if len(u.Payload) > math.MaxUint32 {
		return nil, bad("payload of %d bytes", len(u.Payload))
	}
	b := make([]byte, UpdateFrameLen(len(u.Payload)))
	putHeader(b, KindUpdate, u.T)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(u.Payload)))
	copy(b[updateHdrLen:], u.Payload)
	return b, nil
}

// PeekKind returns the kind and round id of a binary frame after checking
// its header.
func PeekKind(b []byte) (kind byte, t int, err error) {
	if len(b) < headerLen {
		return 0, 0, bad("frame of %d bytes is shorter than its %d-byte header", len(b), headerLen)
	}
	if b[0] != 'B' || b[1] != 'F' {
		return 0, 0, bad("bad magic %q", b[:2])
	}
	if b[2] != Version {
		return 0, 0, bad("frame version %d, want %d", b[2], Version)
	}
	t = int(binary.LittleEndian.Uint32(b[4:]))
	if t == 0 {
		return 0, 0, bad("round id 0")
	}
	switch b[3] {
	case KindRound, KindUpdate, KindSecAgg:
		return b[3], t, nil
	}
	return 0, 0, bad("unknown frame kind %d", b[3])
}

// DecodeRound decodes a round assignment under lim.
func DecodeRound(b []byte, lim Limits) (RoundFrame, error) {
	if len(b) > lim.maxBytes() {
		return RoundFrame{}, bad("frame of %d bytes exceeds limit %d", len(b), lim.maxBytes())
	}
	kind, t, err := PeekKind(b)
	if err != nil {
		return RoundFrame{}, err
	}
	if kind != KindRound {
		return RoundFrame{}, bad("frame kind %d, want round", kind)
	}
	if len(b) < roundHeaderLen {
		return RoundFrame{}, bad("round frame of %d bytes is shorter than its header", len(b))
	}
	deadline := binary.LittleEndian.Uint32(b[8:])
	d := int(binary.LittleEndian.Uint32(b[12:]))
	flags := b[16]
	if d == 0 || d > MaxDim {
		return RoundFrame{}, bad("dim %d out of range", d)
	}
	if lim.Dim > 0 && d != lim.Dim {
		return RoundFrame{}, bad("dim %d, session dim is %d", d, lim.Dim)
	}
	if flags&^(flagXPrev|flagPrevIsLast) != 0 || flags == flagXPrev|flagPrevIsLast {
		return RoundFrame{}, bad("unknown flags %#x", flags)
	}
	withPrev := flags&flagXPrev != 0
	if want := RoundFrameLen(d, withPrev); len(b) != want {
		return RoundFrame{}, bad("round frame of %d bytes, want %d for dim %d", len(b), want, d)
	}
	r := RoundFrame{T: t, DeadlineMillis: int(deadline), PrevIsLast: flags&flagPrevIsLast != 0}
	if r.X, err = getFloats(b[roundHeaderLen:], d); err != nil {
		return RoundFrame{}, err
	}
	if withPrev {
		if r.XPrev, err = getFloats(b[roundHeaderLen+4*d:], d); err != nil {
			return RoundFrame{}, err
		}
	}
	return r, nil
}

func getFloats(b []byte, d int) ([]float64, error) {
	x := make([]float64, d)
	for i := range x {
		f := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, bad("coordinate %d is %v", i, f)
		}
		x[i] = float64(f)
	}
	return x, nil
}

// DecodeUpdate decodes an update frame under lim. The payload aliases b.
func DecodeUpdate(b []byte, lim Limits) (UpdateFrame, error) {
	if len(b) > lim.maxBytes() {
		return UpdateFrame{}, bad("frame of %d bytes exceeds limit %d", len(b), lim.maxBytes())
	}
	kind, t, err := PeekKind(b)
	if err != nil {
		return UpdateFrame{}, err
	}
	if kind != KindUpdate {
		return UpdateFrame{}, bad("frame kind %d, want update", kind)
	}
	if len(b) < updateHdrLen {
		return UpdateFrame{}, bad("update frame of %d bytes is shorter than its header", len(b))
	}
	n := binary.LittleEndian.Uint32(b[8:])
	if uint64(len(b)-updateHdrLen) != uint64(n) {
		return UpdateFrame{}, bad("update payload length %d, frame carries %d", n, len(b)-updateHdrLen)
	}
	if n == 0 {
		return UpdateFrame{}, bad("empty update payload")
	}
	return UpdateFrame{T: t, Payload: b[updateHdrLen:]}, nil
}
