package wire

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"unicode"
	"unicode/utf8"

	"browserfl/shared/session"
)

// Version is the protocol version. A peer that sends another version is
// refused with CodeVersion.
const Version = 1

// ErrBadFrame is wrapped by every decoding error: the peer sent something
// this protocol does not allow. The connection that sent it is closed.
var ErrBadFrame = errors.New("wire: bad frame")

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadFrame, fmt.Sprintf(format, args...))
}

// Type names a control message.
type Type string

// The control message types. The direction is device -> coordinator (D->C)
// or coordinator -> device (C->D).
const (
	TypeHello    Type = "hello"    // D->C, first message of every connection
	TypeWelcome  Type = "welcome"  // C->D, reply to hello
	TypeStatus   Type = "status"   // D->C, ask for the decision of a past round
	TypeDecision Type = "decision" // C->D, inclusion acknowledgement or status reply
	TypeEnd      Type = "end"      // C->D, the session has finished its rounds
	TypeError    Type = "error"    // C->D, sent just before the coordinator closes
	TypeLeave    Type = "leave"    // D->C, the device stops taking part (it closes next)
	TypeStart    Type = "start"    // C->D, the teacher started a lobby session: its final parameters
)

// Hello opens a connection. At first contact DeviceID and Secret are empty
// and the coordinator issues both in Welcome; afterwards the device resumes
// with them. Pending is the round whose update the device sent but whose
// decision it has not received (0 if none): the coordinator answers it in
// Welcome.Pending before anything else.
type Hello struct {
	Version  int    `json:"v"`
	JoinCode string `json:"join_code"`
	DeviceID string `json:"device_id,omitempty"`
	Secret   string `json:"secret,omitempty"`
	Pending  int    `json:"pending,omitempty"`
	// Budget is the zCDP rho (Bun–Steinke) the device's owner allows for
	// this session. Informational: the device enforces it itself.
	Budget float64 `json:"budget,omitempty"`
	// Nickname is an optional name the person chose for the lobby list
	// (no personal data). At most MaxNicknameLen characters from
	// letters, digits, space, '-' and '_' (CheckNickname); a hello with
	// another nickname is refused as a bad frame.
	Nickname string `json:"nickname,omitempty"`
	// KeepsX says the device keeps the X of the last round frame it
	// received on this connection, so it can be sent frames whose x_{t-1}
	// is that X (RoundFrame.PrevIsLast). Devices that do not say so get
	// whole frames.
	KeepsX bool `json:"keeps_x,omitempty"`
	// SignKey is the device's long-term ed25519 public key, base64
	// (standard encoding, 32 bytes): the key its secure aggregation
	// messages are signed with in a session of SharedNoiseAlgorithm
	// (SecAggSetup lists it in the round's directory). Empty: the
	// device takes no part in such rounds.
	SignKey string `json:"sign_key,omitempty"`
}

// SignKeyBytes returns the 32 bytes of h.SignKey (ok false when it is
// empty or not a base64 encoding of 32 bytes).
func (h Hello) SignKeyBytes() (key [32]byte, ok bool) {
	b, err := base64.StdEncoding.Strict().DecodeString(h.SignKey)
	if err != nil || len(b) != len(key) {
		return key, false
	}
	copy(key[:], b)
	return key, true
}

// MaxNicknameLen bounds Hello.Nickname, in characters.
const MaxNicknameLen = 24

// CheckNickname returns nil if s is a valid nickname: empty, or at most
// MaxNicknameLen characters, each a letter or digit (any script), a
// space, '-' or '_', with at least one letter or digit.
func CheckNickname(s string) error {
	if s == "" {
		return nil
	}
	n := 0
	blank := true
	for _, r := range s {
		n++
		switch {
		case r == ' ' || r == '-' || r == '_':
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			blank = false
		default:
			return fmt.Errorf("nickname: character %q not allowed (letters, digits, space, - and _ only)", r)
		}
	}
	switch {
	case !utf8.ValidString(s):
		return errors.New("nickname: not valid UTF-8")
	case n > MaxNicknameLen:
		return fmt.Errorf("nickname: %d characters, at most %d", n, MaxNicknameLen)
	case blank:
		// Spaces, - and _ alone: the projector would show nothing to
		// tell two such names apart (their look-alike form is empty).
		return errors.New("nickname: it needs a letter or a digit")
	}
	return nil
}

// Welcome accepts a hello. Secret is set only when the device id is new
// (first contact); the device must store it to resume.
type Welcome struct {
	Version  int           `json:"v"`
	DeviceID string        `json:"device_id"`
	Secret   string        `json:"secret,omitempty"`
	Session  SessionParams `json:"session"`
	// Committed is the last round the coordinator committed.
	Committed int `json:"committed"`
	// Pending answers Hello.Pending; nil when Hello.Pending was 0.
	Pending *Decision `json:"pending,omitempty"`
	// Lobby is true while the session waits in its lobby for the
	// teacher's Start: Session is then provisional (its cohort, rounds
	// and deadline are sized at Start) and the device sets nothing up
	// until a Start message brings the final parameters.
	Lobby bool `json:"lobby,omitempty"`
}

// Start is sent to every device of a lobby when the teacher starts the
// session: Session holds the final parameters. The device checks them
// against its owner's budget and either takes part with them or leaves
// (Leave, reason "stopped"). A device that connects after Start gets the
// final parameters in its Welcome instead.
type Start struct {
	Session SessionParams `json:"session"`
}

// SessionParams are a session's public parameters: everything a device
// needs to compute its own noise scale and check its own budget (DESIGN
// principle 2). They are shared/session.Params, the one type the
// algorithms read too (as optim.Params), with the protocol's JSON names;
// wire imports nothing of the algorithms, so the protocol stays decodable
// on its own.
type SessionParams = session.Params

// MaxLocalEpochs bounds SessionParams.LocalEpochs (each epoch is a pass
// of hidden local steps on a device): session.MaxLocalEpochs, the
// algorithms' bound too.
const MaxLocalEpochs = session.MaxLocalEpochs

// MaxLabelsLen bounds SessionParams.Labels.
const MaxLabelsLen = 1024

// MaxTaskLen bounds SessionParams.Task; it is task.MaxDefinitionBytes
// (wire imports nothing of task; shared/plan's tests check they agree).
const MaxTaskLen = 12 << 10

// MaxTransformLen bounds SessionParams.Transform.
const MaxTransformLen = 32

// MaxSessionBytes bounds a session's parameters as JSON: they travel in
// a Welcome or a Start, control messages of at most MaxControlBytes,
// and the Welcome's other fields take well under 1 KiB.
const MaxSessionBytes = MaxControlBytes - 1<<10

// SharedNoiseAlgorithm is the algorithm whose devices add only a share of
// the noise (optim's "shared"): its rounds run secure aggregation
// (KindSecAgg frames), and its devices never send an update frame.
const SharedNoiseAlgorithm = "shared"

// ValidateSession checks p for values no session can have on the wire
// (shared/optim/algo.Validate checks it for its algorithm). Its errors wrap
// ErrBadFrame.
func ValidateSession(p SessionParams) error {
	switch {
	case p.Algorithm == "":
		return bad("session: empty algorithm")
	case p.Algorithm != SharedNoiseAlgorithm && (p.Threshold != 0 || p.Colluders != 0):
		return bad("session: threshold %d, colluders %d: only %q has them", p.Threshold, p.Colluders, SharedNoiseAlgorithm)
	case p.Threshold < 0 || p.Threshold > p.Cohort || p.Colluders < 0:
		return bad("session: threshold %d, colluders %d: want 0 <= threshold <= cohort %d, colluders >= 0", p.Threshold, p.Colluders, p.Cohort)
	case p.Dim <= 0 || p.Dim > MaxDim:
		return bad("session: dim %d outside [1, %d]", p.Dim, MaxDim)
	case p.Cohort <= 0 || p.Rounds <= 0 || p.Batch <= 0 || p.M < p.Cohort:
		return bad("session: M %d, cohort %d, rounds %d, batch %d: want positive with cohort <= M", p.M, p.Cohort, p.Rounds, p.Batch)
	case p.Rounds > session.MaxRounds:
		return bad("session: rounds %d, at most %d", p.Rounds, session.MaxRounds)
	case p.MaxReleases < 0 || p.MaxReleases > p.Rounds:
		return bad("session: max releases %d outside [0, rounds %d]", p.MaxReleases, p.Rounds)
	case !(p.Rho >= 0) || !(p.Clip >= 0) || !(p.Eta > 0):
		return bad("session: rho_p %v, clip %v, eta %v out of range", p.Rho, p.Clip, p.Eta)
	case !(p.SignalBound >= 0) || math.IsInf(p.SignalBound, 1):
		return bad("session: signal bound %v: want a finite value >= 0", p.SignalBound)
	case p.LocalSteps < 0 || p.LocalSteps > p.Batch:
		return bad("session: local steps %d outside [0, batch %d]", p.LocalSteps, p.Batch)
	case p.LocalEpochs < 0 || p.LocalEpochs > MaxLocalEpochs:
		return bad("session: local epochs %d outside [0, %d]", p.LocalEpochs, MaxLocalEpochs)
	case p.DeadlineMillis <= 0:
		return bad("session: deadline %d ms must be positive", p.DeadlineMillis)
	case len(p.Labels) > MaxLabelsLen:
		return bad("session: labels of %d bytes, at most %d", len(p.Labels), MaxLabelsLen)
	case p.Labels != "" && len(p.LabelNames()) != p.Classes:
		return bad("session: %d labels for %d classes", len(p.LabelNames()), p.Classes)
	case len(p.Task) > MaxTaskLen:
		return bad("session: task definition of %d bytes, at most %d", len(p.Task), MaxTaskLen)
	case len(p.Transform) > MaxTransformLen:
		return bad("session: transform name of %d bytes, at most %d", len(p.Transform), MaxTransformLen)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return bad("session: %v", err)
	}
	if len(b) > MaxSessionBytes {
		return bad("session: %d bytes as JSON, at most %d (a control message): shorten the task's words or lists", len(b), MaxSessionBytes)
	}
	return nil
}

// Status asks for the decision of round T (a device resuming with a
// pending update it sent on an earlier connection).
type Status struct {
	T int `json:"t"`
}

// Decision states.
const (
	Included = "included" // the update is in the committed round: Commit
	Excluded = "excluded" // it is not and never will be: Abort
	Pending  = "pending"  // the round is still open: wait for a decision
)

// Decision is the coordinator's word on a device's update of round T. The
// coordinator sends Included only after round T is durably committed.
type Decision struct {
	T     int    `json:"t"`
	State string `json:"state"`
	// Reason says why an update was excluded when the device could not
	// know it (for example "rejected: ..." when the update failed the
	// coordinator's validation); empty otherwise. Informational only.
	Reason string `json:"reason,omitempty"`
}

// Leave reasons.
const (
	LeaveDone    = "done"    // the device's data is used up, or its budget is spent
	LeaveStopped = "stopped" // the owner stopped training or closed the page
)

// Leave says the device stops taking part: the coordinator no longer
// samples it. A pending update the device already sent stays valid (its
// decision is still sent if the connection is open, and is answered on a
// later hello). Reason is one of the Leave* constants (others are kept as
// "stopped").
type Leave struct {
	Reason string `json:"reason,omitempty"`
	// Detail optionally says why in words: one of the LeaveDetail*
	// constants or TooFewWords. The dashboard shows it to the class, so
	// any other text is dropped when the message is decoded
	// (KnownLeaveDetail).
	Detail string `json:"detail,omitempty"`
}

// The words a Leave may give for why (Leave.Detail), besides TooFewWords.
const (
	LeaveDetailOverBudget = "the final parameters exceed this device's privacy budget"
	LeaveDetailRefused    = "the final parameters were refused by this device's settings"
	LeaveDetailUsedUp     = "its data is used up (each sample is used once)"
	LeaveDetailSpent      = "its privacy budget is spent"
)

// TooFewWords says that a device has have samples (unit: "rows" or
// "samples") and a round needs need.
func TooFewWords(unit string, have, need int) string {
	return fmt.Sprintf("too few %s for one round: this device has %d and a round needs %d (add %d more)", unit, have, need, need-have)
}

// KnownLeaveDetail returns d if it is words a device gives for leaving
// (a LeaveDetail* constant, or TooFewWords of rows or samples), else "".
func KnownLeaveDetail(d string) string {
	switch d {
	case LeaveDetailOverBudget, LeaveDetailRefused, LeaveDetailUsedUp, LeaveDetailSpent:
		return d
	}
	var unit string
	var have, need int
	if _, err := fmt.Sscanf(d, "too few %s for one round: this device has %d and a round needs %d", &unit, &have, &need); err == nil &&
		(unit == "rows" || unit == "samples") && have >= 0 && need > have && d == TooFewWords(unit, have, need) {
		return d
	}
	return ""
}

// MaxLeaveDetail bounds a reason in words that reaches the dashboard from
// another process (an edge's).
const MaxLeaveDetail = 200

// End says the session has run all its rounds.
type End struct {
	Committed int `json:"committed"`
}

// Error codes sent in an Error message before the coordinator closes.
const (
	CodeVersion    = "version"     // unsupported protocol version
	CodeJoinCode   = "join_code"   // wrong or missing join code
	CodeAuth       = "auth"        // unknown device id or wrong secret
	CodeBadFrame   = "bad_frame"   // a frame failed to decode
	CodeRate       = "rate"        // too many messages
	CodeProtocol   = "protocol"    // a valid frame at the wrong time
	CodeFull       = "full"        // the coordinator holds too many devices
	CodeShutdown   = "shutdown"    // the coordinator is stopping
	CodeDuplicate  = "duplicate"   // the device opened another connection
	CodeSessionEnd = "session_end" // nothing left to do
	CodeNickname   = "nickname"    // the nickname looks like one present; choose another
	CodeRemoved    = "removed"     // the teacher removed the device from the session (refused for the rest of it)
)

// Error explains why the coordinator closes a connection.
type Error struct {
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// Message is any control message.
type Message interface{ wireType() Type }

func (Hello) wireType() Type    { return TypeHello }
func (Welcome) wireType() Type  { return TypeWelcome }
func (Status) wireType() Type   { return TypeStatus }
func (Decision) wireType() Type { return TypeDecision }
func (End) wireType() Type      { return TypeEnd }
func (Error) wireType() Type    { return TypeError }
func (Leave) wireType() Type    { return TypeLeave }
func (Start) wireType() Type    { return TypeStart }

type envelope struct {
	Type Type            `json:"type"`
	Body json.RawMessage `json:"body"`
}

// MaxControlBytes bounds a control message.
const MaxControlBytes = 16 << 10

// EncodeControl encodes m as a text frame payload:
// {"type": "...", "body": {...}}.
func EncodeControl(m Message) ([]byte, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("wire: encode %s: %w", m.wireType(), err)
	}
	out, err := json.Marshal(envelope{Type: m.wireType(), Body: body})
	if err != nil {
		return nil, fmt.Errorf("wire: encode %s: %w", m.wireType(), err)
	}
	return out, nil
}

// DecodeControl decodes a text frame payload into one of the concrete
// message types (returned by value). Unknown fields are ignored (forward
// compatibility); unknown types and oversized or malformed frames are
// errors wrapping ErrBadFrame.
func DecodeControl(b []byte) (Message, error) {
	if len(b) > MaxControlBytes {
		return nil, bad("control message of %d bytes exceeds %d", len(b), MaxControlBytes)
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, bad("control envelope: %v", err)
	}
	if len(env.Body) == 0 {
		return nil, bad("control message %q without body", env.Type)
	}
	var m Message
	var err error
	switch env.Type {
	case TypeHello:
		var v Hello
		err = json.Unmarshal(env.Body, &v)
		if err == nil && v.Pending < 0 {
			err = errors.New("negative pending round")
		}
		if err == nil {
			err = CheckNickname(v.Nickname)
		}
		if _, ok := v.SignKeyBytes(); err == nil && v.SignKey != "" && !ok {
			err = errors.New("sign key is not the base64 of 32 bytes")
		}
		m = v
	case TypeWelcome:
		var v Welcome
		err = json.Unmarshal(env.Body, &v)
		if err == nil {
			err = ValidateSession(v.Session)
		}
		if err == nil && v.Pending != nil {
			err = v.Pending.check()
		}
		m = v
	case TypeStatus:
		var v Status
		err = json.Unmarshal(env.Body, &v)
		if err == nil && v.T <= 0 {
			err = fmt.Errorf("round id %d", v.T)
		}
		m = v
	case TypeDecision:
		var v Decision
		err = json.Unmarshal(env.Body, &v)
		if err == nil {
			err = v.check()
		}
		m = v
	case TypeEnd:
		var v End
		err = json.Unmarshal(env.Body, &v)
		m = v
	case TypeError:
		var v Error
		err = json.Unmarshal(env.Body, &v)
		m = v
	case TypeLeave:
		var v Leave
		err = json.Unmarshal(env.Body, &v)
		if err == nil && v.Reason != LeaveDone {
			v.Reason = LeaveStopped
		}
		v.Detail = KnownLeaveDetail(v.Detail)
		m = v
	case TypeStart:
		var v Start
		err = json.Unmarshal(env.Body, &v)
		if err == nil {
			err = ValidateSession(v.Session)
		}
		m = v
	default:
		return nil, bad("unknown control message type %q", env.Type)
	}
	if err != nil {
		return nil, bad("%s: %v", env.Type, err)
	}
	return m, nil
}

func (d Decision) check() error {
	if d.T <= 0 {
		return fmt.Errorf("round id %d", d.T)
	}
	switch d.State {
	case Included, Excluded, Pending:
		return nil
	}
	return fmt.Errorf("unknown decision state %q", d.State)
}

// DigestHeader is the HTTP header with which the coordinator states a
// whole demo file's SHA-256 (hex, of the uncompressed body: the demo
// shard, the demo rows), so that a device that keeps the file can check
// its copy whenever it reads it again.
const DigestHeader = "X-Content-SHA256"
