package bus

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"

	"browserfl/shared/wire"
)

// The cluster shape's messages (docs/cluster.md): an edge process and the
// session process exchange envelopes over NATS on two subjects per edge,
//
//	<prefix>.up.<edge>    edge -> session: hellos, updates (pre-aggregated), secure aggregation frames, events, beats
//	<prefix>.down.<edge>  session -> edge: control messages for devices, round frames, secure aggregation frames, beats
//
// Core NATS keeps the order of one publisher's messages on one subject,
// and each side handles one edge's subject on one goroutine, so what
// the session sends an edge arrives in the order it was sent (a welcome
// before the device's first round, a round's decisions after its beat
// says it committed). Nothing else is assumed of NATS: a lost message is
// repaired by the beats (docs/cluster.md, "What can go wrong").
//
// An envelope is
//
//	byte 0      busVersion
//	byte 1      kind
//	bytes 2-5   H, the header's length (uint32, big endian)
//	H bytes     header: JSON (busHeader)
//	the rest    body: a device control message (JSON), a round frame, a
//	            secure aggregation frame (wire kind 3), or a float64 vector
//	            (little endian), depending on the kind
//
// Version 2: a hello carries digests of the join code and the device's
// secret instead of the values (the session's beat, the join code's
// digest), so no credential a reader could reuse crosses the bus.
const Version = 2

// Envelope kinds.
const (
	// edge -> session
	KindHello      = 1 // Seq, Addr; body: the device's Hello
	KindAggregate  = 2 // Epoch, T, IDs, Seqs, Missing, MissingSeqs, Bytes; body: the sum of the IDs' decoded updates
	KindReject     = 3 // Epoch, Seq, ID, T, Norm, Reason: the edge rejected this update (Reason in plain words); the device was told
	KindStatus     = 4 // Seq, ID, T: a device's status query
	KindLeave      = 5 // Seq, ID; body: the Leave
	KindDisconnect = 6 // Seq, ID
	KindRoster     = 7 // Roster, T (the roster's number), Chunk, Chunks: devices the edge holds, in chunks (asked for by a beat's Resync)
	KindEdgeBeat   = 8 // Devices
	// KindSecAggUp: Epoch, Seq, ID, T; body: a secure aggregation frame
	// the device of connection Seq sent (a shared-noise session's step).
	KindSecAggUp = 9
	// session -> edge
	KindControl     = 20 // Seq; body: a control message for the device
	KindClose       = 21 // Seq, Code, Reason: close the device's connection
	KindRound       = 22 // Epoch, T, Seqs, Dim, Bound, DeadlineMillis; body: the round frame
	KindSessionBeat = 23 // Epoch, Beat
	// KindSecAggDown: Epoch, Seq; body: a secure aggregation frame for
	// the device of connection Seq (its setup, or a step's message).
	KindSecAggDown = 24
)

// Header is every envelope's header; each kind uses the fields its
// comment names.
type Header struct {
	// Epoch is the session process's random epoch: set on everything it
	// sends, and on an aggregate for the round of that epoch.
	Epoch uint64 `json:"epoch,omitempty"`
	// Instance is the edge process's random instance, on everything it
	// sends (a restarted edge numbers its connections afresh).
	Instance uint64   `json:"instance,omitempty"`
	Seq      uint64   `json:"seq,omitempty"`
	Seqs     []uint64 `json:"seqs,omitempty"`
	// Marks, on a round, say where each member's history stands at the
	// session (beside Seqs): an edge keeps a history of its devices'
	// included updates and starts it again when a mark says it missed
	// something (coordinator/edge/edgehist.go).
	Marks       []Mark   `json:"marks,omitempty"`
	ID          string   `json:"id,omitempty"`
	IDs         []string `json:"ids,omitempty"`
	Missing     []string `json:"missing,omitempty"`
	MissingSeqs []uint64 `json:"missing_seqs,omitempty"`
	T           int      `json:"t,omitempty"`
	Bytes       int64    `json:"bytes,omitempty"`
	Norm        float64  `json:"norm,omitempty"`
	Addr        string   `json:"addr,omitempty"`
	Code        string   `json:"code,omitempty"`
	Reason      string   `json:"reason,omitempty"`
	Dim         int      `json:"dim,omitempty"`
	Bound       float64  `json:"bound,omitempty"` // 0: no norm bound (finiteness only)
	// Session is the session's public parameters, on a round: an edge
	// derives the same tests of each update from them (plausible.Checker).
	Session        *wire.SessionParams `json:"session,omitempty"`
	DeadlineMillis int                 `json:"deadline_ms,omitempty"`
	Devices        int                 `json:"devices,omitempty"`
	// MsgRate is, on an edge beat, the messages per second the edge holds
	// each device's connection to (its -msg-rate): the session paces its
	// rounds for the slowest edge.
	MsgRate float64       `json:"msg_rate,omitempty"`
	Roster  []RosterEntry `json:"roster,omitempty"`
	Chunk   int           `json:"chunk,omitempty"`  // a roster chunk's index
	Chunks  int           `json:"chunks,omitempty"` // the roster's chunk count
	Beat    *SessionBeat  `json:"beat,omitempty"`
	// CodeHash and SecretHash are a hello's credentials (the hello body
	// carries neither): hex SHA-256 of the join code the device gave and
	// of its secret (a new device's: the secret the edge issued it).
	CodeHash   string `json:"code_sha256,omitempty"`
	SecretHash string `json:"secret_sha256,omitempty"`
}

// RosterEntry is a device an edge holds: its connection number, id,
// nickname and the round it was assigned and has no decision for yet.
type RosterEntry struct {
	Seq      uint64 `json:"seq"`
	ID       string `json:"id"`
	Nickname string `json:"nickname,omitempty"`
	Pending  int    `json:"pending,omitempty"`
	// SecretHash is the hex SHA-256 of the device's secret: an edge can
	// claim only a device whose secret it was given.
	SecretHash string `json:"secret_sha256"`
	// SignKey is the long-term signing key of the device's hello
	// (wire.Hello.SignKey, base64; empty if it gave none): a session
	// process that restarted needs it for the device's secure
	// aggregation, as it would from the hello.
	SignKey string `json:"sign_key,omitempty"`
}

// SessionBeat is what the session tells every edge once a beat interval.
type SessionBeat struct {
	// JoinCodeHash is the hex SHA-256 of the join code: the edge checks
	// a device's code against it (the code itself stays off the bus).
	JoinCodeHash string `json:"join_code_sha256"`
	Committed    int    `json:"committed"`
	Open         int    `json:"open,omitempty"` // the round being collected, 0 if none
	// Finished: the session has run all its rounds (or was ended); an
	// edge makes sure each of its devices got End.
	Finished bool `json:"finished,omitempty"`
	// Resync asks the edge to send its roster: the session did not know
	// it, had given it up for dead, or counts other devices on it than
	// the edge does. Repeated every beat until a whole roster arrives.
	Resync bool `json:"resync,omitempty"`
}

// MaxIDs bounds the ids of one envelope (a round's cohort on one
// edge, a roster chunk).
const MaxIDs = 1 << 16

// RosterChunk is the most roster entries one envelope carries: about
// 160 bytes each with a signing key, 0.65 MB a chunk; with 24-character
// nicknames of four-byte characters up to 1.35 MB, within the 8 MiB the
// embedded server allows (an external NATS server needs max_payload above
// its default 1 MiB for such a class).
const RosterChunk = 4096

var edgeIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckEdgeID reports whether id can name an edge (a NATS subject token).
func CheckEdgeID(id string) error {
	if !edgeIDPattern.MatchString(id) {
		return fmt.Errorf("edge id %q: 1 to 64 letters, digits, '-' or '_'", id)
	}
	return nil
}

// Digest is the hex SHA-256 of a credential: what crosses the bus in
// its place (the store keeps the same hash of a device's secret).
func Digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// CodeDigest is the digest of a join code as it crosses the bus: of its
// normalised form (wire.NormalizeJoinCode), so that an edge and the
// session compare codes as the one-process coordinator does.
func CodeDigest(code string) string { return Digest(wire.NormalizeJoinCode(code)) }

// ParseDigest decodes a digest from an envelope (64 hex digits).
func ParseDigest(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("%w: a credential digest must be %d hex digits", errBus, 2*sha256.Size)
	}
	return b, nil
}

// errBus wraps every envelope decoding error.
var errBus = errors.New("cluster message")

// Encode builds an envelope.
func Encode(kind byte, h *Header, body []byte) ([]byte, error) {
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("cluster message header: %w", err)
	}
	out := make([]byte, 6, 6+len(hb)+len(body))
	out[0], out[1] = Version, kind
	binary.BigEndian.PutUint32(out[2:], uint32(len(hb)))
	out = append(out, hb...)
	return append(out, body...), nil
}

// Decode parses an envelope and checks what every kind shares: the
// version, a known kind, the header's JSON and its bounds. The body is a
// subslice of b. What the fields mean is checked by the receiver against
// its state.
func Decode(b []byte) (kind byte, h Header, body []byte, err error) {
	if len(b) < 6 {
		return 0, h, nil, fmt.Errorf("%w: %d bytes, shorter than the envelope's 6", errBus, len(b))
	}
	if b[0] != Version {
		return 0, h, nil, fmt.Errorf("%w: version %d, want %d", errBus, b[0], Version)
	}
	kind = b[1]
	switch kind {
	case KindHello, KindAggregate, KindReject, KindStatus, KindLeave, KindDisconnect, KindRoster, KindEdgeBeat, KindSecAggUp,
		KindControl, KindClose, KindRound, KindSessionBeat, KindSecAggDown:
	default:
		return 0, h, nil, fmt.Errorf("%w: unknown kind %d", errBus, kind)
	}
	n := binary.BigEndian.Uint32(b[2:6])
	if uint64(n) > uint64(len(b)-6) {
		return 0, h, nil, fmt.Errorf("%w: header of %d bytes in %d", errBus, n, len(b)-6)
	}
	if err := json.Unmarshal(b[6:6+n], &h); err != nil {
		return 0, h, nil, fmt.Errorf("%w: header: %v", errBus, err)
	}
	switch {
	case len(h.IDs) > MaxIDs || len(h.Seqs) > MaxIDs || len(h.Missing) > MaxIDs || len(h.MissingSeqs) > MaxIDs ||
		len(h.Roster) > MaxIDs:
		return 0, h, nil, fmt.Errorf("%w: more than %d ids", errBus, MaxIDs)
	case h.T < 0 || h.T > 1<<40 || h.Bytes < 0 || h.Dim < 0 || h.DeadlineMillis < 0 || h.Devices < 0 ||
		h.Chunk < 0 || h.Chunks < 0 || h.Chunk >= max(h.Chunks, 1):
		return 0, h, nil, fmt.Errorf("%w: negative field", errBus)
	case math.IsNaN(h.Norm) || math.IsNaN(h.Bound) || h.Bound < 0:
		return 0, h, nil, fmt.Errorf("%w: bad norm or bound", errBus)
	case !(h.MsgRate >= 0 && h.MsgRate <= math.MaxFloat64):
		return 0, h, nil, fmt.Errorf("%w: bad message rate", errBus)
	case h.Session != nil && h.Session.Dim != h.Dim:
		return 0, h, nil, fmt.Errorf("%w: session parameters of dimension %d on a round of dimension %d", errBus, h.Session.Dim, h.Dim)
	case len(h.Marks) > 0 && len(h.Marks) != len(h.Seqs):
		return 0, h, nil, fmt.Errorf("%w: %d history marks for %d members", errBus, len(h.Marks), len(h.Seqs))
	case slices.ContainsFunc(h.Marks, func(m Mark) bool { return m.Incl < 0 || m.Asks < 1 }):
		return 0, h, nil, fmt.Errorf("%w: a history mark with a negative count or no ask", errBus)
	}
	return kind, h, b[6+n:], nil
}

// EncodeVector appends v as little-endian float64s.
func EncodeVector(dst []byte, v []float64) []byte {
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(x))
	}
	return dst
}

// DecodeVector decodes a body of exactly len(dst) float64s into dst.
func DecodeVector(dst []float64, b []byte) error {
	if len(b) != 8*len(dst) {
		return fmt.Errorf("%w: vector of %d bytes, want %d (d = %d)", errBus, len(b), 8*len(dst), len(dst))
	}
	for i := range dst {
		dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return nil
}
