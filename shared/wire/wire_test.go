package wire

import (
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"browserfl/shared/session"
)

func TestControlRoundTrip(t *testing.T) {
	sess := SessionParams{Name: "demo", Algorithm: "nc", Model: "logreg", Dim: 7850, M: 30,
		Cohort: 10, Rounds: 100, Rho: 2, Clip: 1, Eta: 0.5, Batch: 16, DeadlineMillis: 5000, Compressor: "randk:0.1+ef"}
	msgs := []Message{
		Hello{Version: 1, JoinCode: "ABCD", DeviceID: "d1", Secret: "s", Pending: 3, Budget: 4},
		Hello{Version: 1, JoinCode: "ABCD", Nickname: "Ada L-2_x"},
		Welcome{Version: 1, DeviceID: "d1", Secret: "s", Session: sess, Committed: 7, Pending: &Decision{T: 3, State: Included}},
		Welcome{Version: 1, DeviceID: "d1", Session: sess, Lobby: true},
		Start{Session: sess},
		Leave{Reason: LeaveStopped, Detail: LeaveDetailOverBudget},
		Status{T: 4},
		Decision{T: 9, State: Excluded},
		Decision{T: 10, State: Excluded, Reason: "rejected: norm 1e+08 above the bound 671"},
		Leave{Reason: LeaveDone},
		Leave{Reason: LeaveStopped},
		End{Committed: 100},
		Error{Code: CodeAuth, Reason: "wrong secret"},
	}
	for _, m := range msgs {
		b, err := EncodeControl(m)
		if err != nil {
			t.Fatalf("encode %T: %v", m, err)
		}
		got, err := DecodeControl(b)
		if err != nil {
			t.Fatalf("decode %T: %v", m, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip: got %#v, want %#v", got, m)
		}
	}
}

func TestControlRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"not json", `hello`},
		{"unknown type", `{"type":"steal","body":{}}`},
		{"no body", `{"type":"status"}`},
		{"zero round", `{"type":"status","body":{"t":0}}`},
		{"bad state", `{"type":"decision","body":{"t":1,"state":"maybe"}}`},
		{"negative pending", `{"type":"hello","body":{"v":1,"pending":-1}}`},
		{"bad nickname", `{"type":"hello","body":{"v":1,"nickname":"<script>"}}`},
		{"start without session", `{"type":"start","body":{}}`},
		{"bad session", `{"type":"welcome","body":{"v":1,"session":{"algorithm":"x","dim":0}}}`},
		{"wrong body type", `{"type":"status","body":{"t":"one"}}`},
		{"too big", `{"type":"status","body":{"t":1},"pad":"` + string(make([]byte, MaxControlBytes)) + `"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeControl([]byte(tc.in))
			if !errors.Is(err, ErrBadFrame) {
				t.Fatalf("DecodeControl(%.40q) error = %v, want ErrBadFrame", tc.in, err)
			}
		})
	}
}

func TestRoundRoundTrip(t *testing.T) {
	tests := []RoundFrame{
		{T: 1, DeadlineMillis: 1000, X: []float64{1, -2.5, 0}},
		{T: 12, DeadlineMillis: 0, X: []float64{0.25, 3}, XPrev: []float64{-1, 8}},
		{T: 13, DeadlineMillis: 5, X: []float64{0.5, -3}, PrevIsLast: true},
	}
	for _, r := range tests {
		b, err := EncodeRound(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeRound(b, Limits{Dim: len(r.X)})
		if err != nil {
			t.Fatal(err)
		}
		// The values above are exact in float32.
		if !reflect.DeepEqual(got, r) {
			t.Errorf("got %+v, want %+v", got, r)
		}
	}
}

func TestRoundRejects(t *testing.T) {
	good, err := EncodeRound(RoundFrame{T: 2, DeadlineMillis: 10, X: []float64{1, 2}, XPrev: []float64{3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	tests := []struct {
		name string
		in   []byte
		lim  Limits
	}{
		{"short", good[:5], Limits{}},
		{"magic", mut(func(b []byte) []byte { b[0] = 'X'; return b }), Limits{}},
		{"version", mut(func(b []byte) []byte { b[2] = 9; return b }), Limits{}},
		{"kind", mut(func(b []byte) []byte { b[3] = KindUpdate; return b }), Limits{}},
		{"round zero", mut(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], 0); return b }), Limits{}},
		{"truncated", good[:len(good)-1], Limits{}},
		{"trailing", append(append([]byte(nil), good...), 0), Limits{}},
		{"dim mismatch", good, Limits{Dim: 3}},
		{"huge dim", mut(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[12:], math.MaxUint32); return b }), Limits{}},
		{"flags", mut(func(b []byte) []byte { b[16] = 6; return b }), Limits{}},
		{"both xprev flags", mut(func(b []byte) []byte { b[16] = 3; return b }), Limits{}},
		{"prev-is-last with xprev's bytes", mut(func(b []byte) []byte { b[16] = 2; return b }), Limits{}},
		{"nan", mut(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[17:], math.Float32bits(float32(math.NaN())))
			return b
		}), Limits{}},
		{"inf in xprev", mut(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[17+8:], math.Float32bits(float32(math.Inf(-1))))
			return b
		}), Limits{}},
		{"over size limit", good, Limits{MaxBytes: 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeRound(tc.in, tc.lim); !errors.Is(err, ErrBadFrame) {
				t.Fatalf("error = %v, want ErrBadFrame", err)
			}
		})
	}
}

func TestEncodeRoundRejects(t *testing.T) {
	tests := []RoundFrame{
		{T: 0, X: []float64{1}},
		{T: 1},
		{T: 1, X: []float64{1}, XPrev: []float64{1, 2}},
		{T: 1, X: []float64{math.Inf(1)}},
		{T: 1, X: []float64{1e39}}, // overflows float32
		{T: 1, X: []float64{1}, XPrev: []float64{2}, PrevIsLast: true},
	}
	for _, r := range tests {
		if _, err := EncodeRound(r); !errors.Is(err, ErrBadFrame) {
			t.Errorf("EncodeRound(%+v) error = %v, want ErrBadFrame", r, err)
		}
	}
}

// ShortRound drops XPrev and sets PrevIsLast, leaving the frame it was
// given alone; it gives nil for frames without XPrev or that are not
// round frames.
func TestShortRound(t *testing.T) {
	full, err := EncodeRound(RoundFrame{T: 4, DeadlineMillis: 9, X: []float64{1, -2, 0.5}, XPrev: []float64{3, 4, 5}})
	if err != nil {
		t.Fatal(err)
	}
	keep := append([]byte(nil), full...)
	short := ShortRound(full)
	got, err := DecodeRound(short, Limits{Dim: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := RoundFrame{T: 4, DeadlineMillis: 9, X: []float64{1, -2, 0.5}, PrevIsLast: true}
	if !reflect.DeepEqual(got, want) || string(full) != string(keep) {
		t.Errorf("ShortRound: %+v, want %+v (full frame changed: %v)", got, want, string(full) != string(keep))
	}
	noPrev, _ := EncodeRound(RoundFrame{T: 4, X: []float64{1}})
	upd, _ := EncodeUpdate(UpdateFrame{T: 4, Payload: []byte{1}})
	for _, b := range [][]byte{noPrev, short, upd, full[:len(full)-1], nil} {
		if ShortRound(b) != nil {
			t.Errorf("ShortRound(%d bytes) is not nil", len(b))
		}
	}
}

func TestUpdate(t *testing.T) {
	b, err := EncodeUpdate(UpdateFrame{T: 5, Payload: []byte{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := DecodeUpdate(b, Limits{})
	if err != nil || u.T != 5 || !reflect.DeepEqual(u.Payload, []byte{1, 2, 3}) {
		t.Fatalf("DecodeUpdate = %+v, %v", u, err)
	}
	bad := [][]byte{b[:len(b)-1], append(append([]byte(nil), b...), 7), b[:12]}
	for _, in := range bad {
		if _, err := DecodeUpdate(in, Limits{}); !errors.Is(err, ErrBadFrame) {
			t.Errorf("DecodeUpdate(%v) error = %v, want ErrBadFrame", in, err)
		}
	}
	if _, err := DecodeUpdate(b, Limits{MaxBytes: 8}); !errors.Is(err, ErrBadFrame) {
		t.Errorf("size limit not enforced: %v", err)
	}
}

// FuzzDecode feeds arbitrary bytes to every decoder: none may panic, and
// whatever decodes must re-encode to the same bytes (binary frames) or
// decode again to the same message (control).
func FuzzDecode(f *testing.F) {
	r, _ := EncodeRound(RoundFrame{T: 3, DeadlineMillis: 7, X: []float64{1, 2}, XPrev: []float64{0, 1}})
	u, _ := EncodeUpdate(UpdateFrame{T: 3, Payload: []byte{9, 9}})
	h, _ := EncodeControl(Hello{Version: 1, JoinCode: "x", Pending: 2})
	d, _ := EncodeControl(Decision{T: 2, State: Pending})
	for _, s := range [][]byte{r, u, h, d, {}, []byte("BF\x01\x01")} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		lim := Limits{MaxBytes: 1 << 16}
		if rf, err := DecodeRound(b, lim); err == nil {
			again, err := EncodeRound(rf)
			if err != nil || string(again) != string(b) {
				t.Fatalf("round frame does not re-encode: %v", err)
			}
			short := ShortRound(b)
			if (short != nil) != (rf.XPrev != nil) {
				t.Fatalf("ShortRound gave %d bytes for a frame with XPrev %v", len(short), rf.XPrev != nil)
			}
			if short != nil {
				sr, err := DecodeRound(short, lim)
				if err != nil || !sr.PrevIsLast || sr.T != rf.T || !reflect.DeepEqual(sr.X, rf.X) {
					t.Fatalf("short frame %+v (%v) of %+v", sr, err, rf)
				}
			}
		}
		if uf, err := DecodeUpdate(b, lim); err == nil {
			again, err := EncodeUpdate(uf)
			if err != nil || string(again) != string(b) {
				t.Fatalf("update frame does not re-encode: %v", err)
			}
		}
		if m, err := DecodeControl(b); err == nil {
			enc, err := EncodeControl(m)
			if err != nil {
				t.Fatalf("re-encode %T: %v", m, err)
			}
			m2, err := DecodeControl(enc)
			if err != nil || !reflect.DeepEqual(m, m2) {
				t.Fatalf("control message does not round-trip: %#v vs %#v (%v)", m, m2, err)
			}
		}
	})
}

// TestSessionRoundsBound: a device refuses a session of more rounds
// than session.MaxRounds (the tables sized by release would not fit), and
// takes one of exactly that many.
func TestSessionRoundsBound(t *testing.T) {
	p := SessionParams{Algorithm: "nc", Dim: 10, M: 2, Cohort: 1, Rounds: session.MaxRounds, Batch: 1, Eta: 1, DeadlineMillis: 1, Classes: 3}
	if err := ValidateSession(p); err != nil {
		t.Errorf("T = MaxRounds: %v", err)
	}
	p.Rounds++
	if err := ValidateSession(p); err == nil {
		t.Errorf("T = MaxRounds + 1 accepted")
	}
}

func TestSessionLabels(t *testing.T) {
	p := SessionParams{Algorithm: "nc", Dim: 10, M: 2, Cohort: 1, Rounds: 1, Batch: 1, Eta: 1, DeadlineMillis: 1, Classes: 3}
	for _, c := range []struct {
		labels string
		ok     bool
	}{{"", true}, {"a,b,c", true}, {"a,b", false}, {"a,b,c,d", false}, {strings.Repeat("x", MaxLabelsLen+1), false}} {
		p.Labels = c.labels
		if err := ValidateSession(p); (err == nil) != c.ok {
			t.Errorf("labels %.20q: err = %v, want ok = %v", c.labels, err, c.ok)
		}
	}
	p.Labels = "T-shirt/top,Trouser,Coat"
	if got := p.LabelNames(); len(got) != 3 || got[2] != "Coat" {
		t.Errorf("LabelNames = %q", got)
	}
}

// TestCheckNickname: what a nickname may be (refused, not stripped).
func TestCheckNickname(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"", true},
		{"Ada", true},
		{"Team 7", true},
		{"blue-fox_3", true},
		{"Zoë", true},
		{"李雷", true},
		{strings.Repeat("a", MaxNicknameLen), true},
		{strings.Repeat("é", MaxNicknameLen), true}, // characters, not bytes
		{strings.Repeat("a", MaxNicknameLen+1), false},
		{"   ", false},
		{"-", false},
		{"_ - _", false},
		{"-a-", true},
		{"a<b", false},
		{"ada@example.com", false},
		{"tab\there", false},
		{"new\nline", false},
		{"emoji 🙂", false},
		{"dot.name", false},
		{"\xff", false},
		{"quote\"", false},
	}
	for _, tc := range tests {
		err := CheckNickname(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("CheckNickname(%q) = %v, want ok %v", tc.in, err, tc.ok)
		}
	}
}

// TestLeaveDetailClosed: a Leave keeps only the details a device gives
// (the dashboard shows them to the class); any other text, such as a
// message to the class with a right-to-left override, is dropped.
func TestLeaveDetailClosed(t *testing.T) {
	for _, tc := range []struct{ sent, want string }{
		{LeaveDetailOverBudget, LeaveDetailOverBudget},
		{LeaveDetailRefused, LeaveDetailRefused},
		{TooFewWords("rows", 5, 32), "too few rows for one round: this device has 5 and a round needs 32 (add 27 more)"},
		{"too few rows for one round: this device has 5 and a round needs 32 (add 27 more) \u202eGO TO evil.example", ""},
		{"too few rows for one round: this device has 5 and a round needs 32 (add 99 more)", ""},
		{"too few pets for one round: this device has 5 and a round needs 32 (add 27 more)", ""},
		{"\u202eTEACHER SAYS: go to evil.example \u0007", ""},
		{strings.Repeat("x", 3*MaxLeaveDetail), ""},
	} {
		b, err := EncodeControl(Leave{Reason: "other", Detail: tc.sent})
		if err != nil {
			t.Fatal(err)
		}
		m, err := DecodeControl(b)
		if err != nil {
			t.Fatal(err)
		}
		if l := m.(Leave); l.Reason != LeaveStopped || l.Detail != tc.want {
			t.Errorf("leave with detail %q decoded as %q, %q; want %q, %q", tc.sent, l.Reason, l.Detail, LeaveStopped, tc.want)
		}
	}
}

// TestNormalizeJoinCode: case, spaces and dashes do not matter; anything
// else does.
func TestNormalizeJoinCode(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"QPHXV8WL6Z", "QPHXV8WL6Z"},
		{"qphxv8wl6z", "QPHXV8WL6Z"},
		{" qphx-v8wl 6z\t", "QPHXV8WL6Z"},
		{"join-me", "JOINME"},
		{"", ""},
		{"ab_c", "AB_C"},
	} {
		if got := NormalizeJoinCode(tc.in); got != tc.want {
			t.Errorf("NormalizeJoinCode(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if NormalizeJoinCode("ABC") == NormalizeJoinCode("ABD") {
		t.Fatal("different codes normalise alike")
	}
}

// TestFrameLen: RoundFrameLen and UpdateFrameLen are the lengths the
// encoders produce.
func TestFrameLen(t *testing.T) {
	for _, tc := range []struct {
		d        int
		withPrev bool
	}{{1, false}, {1, true}, {7, false}, {7, true}, {7850, true}} {
		r := RoundFrame{T: 3, X: make([]float64, tc.d)}
		if tc.withPrev {
			r.XPrev = make([]float64, tc.d)
		}
		b, err := EncodeRound(r)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := RoundFrameLen(tc.d, tc.withPrev), len(b); got != want {
			t.Errorf("RoundFrameLen(%d, %v) = %d, EncodeRound gives %d bytes", tc.d, tc.withPrev, got, want)
		}
	}
	for _, n := range []int{1, 12, 4096} {
		b, err := EncodeUpdate(UpdateFrame{T: 3, Payload: make([]byte, n)})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := UpdateFrameLen(n), len(b); got != want {
			t.Errorf("UpdateFrameLen(%d) = %d, EncodeUpdate gives %d bytes", n, got, want)
		}
	}
}
