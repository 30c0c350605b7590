// Package bridge defines the messages between the browser device's page
// (the main thread: rendering, the drawing canvases, the student's
// clicks) and its dedicated Web Worker (the device runtime, its
// IndexedDB storage, the websocket and training), and how the page's view
// state travels between them as patches.
//
// Both halves are the same Go program (web/app.wasm) started twice: the
// page from web/app.js, the worker from web/worker.js. Every message is
// one JSON text (see ToWorker and ToPage); a file pick also carries the
// picked File objects, which the worker reads itself. Each side decodes
// and validates what it receives with DecodeToWorker / DecodeToPage and
// ignores (and logs) anything it does not know. docs/browser.md lists the
// messages.
//
// State sync. The worker owns the view state (ui.State). After every
// change it sends the fields that changed since its last message (Diff);
// the page applies them (Apply), so what the page renders is the worker's
// state. The page itself writes only a few fields in response to the
// student (PageFields: the error line, the nickname typed, the drawing's
// label and hint, the "try the model" answer); it sends those that
// changed in a "ui" message before any action, and the worker applies
// them to its state, so both sides converge on the worker's order of
// events.
//
// The package is portable Go (no syscall/js): it is tested natively.
package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"unicode/utf8"

	"browserfl/shared/task"
	"browserfl/shared/wire"
	"browserfl/wasm/local"
	"browserfl/wasm/ui"
)

// Messages from the page to the worker (ToWorker.Type).
const (
	// Start: the page is up; Code is the join code from its address
	// ("" shows the box to type one), Origin the page's origin.
	Start = "start"
	// UI: the fields the page changed (UI holds them, see PageFields).
	UI = "ui"
	// The student's actions, as the ui.Controller methods of the same
	// name. Drawing and Try carry the canvas's features (Pixels, 784
	// values in [0, 1]); Drawing also the Label; Files carries the
	// picked files beside the JSON text.
	Join     = "join"     // Budget: the owner's limit (epsilon at the owner's delta)
	Decline  = "decline"  //
	Demo     = "demo"     // LoadDemo
	Drawing  = "drawing"  // AddDrawing
	Files    = "files"    // FilesPicked
	Train    = "train"    //
	Try      = "try"      // TryModel
	Forget   = "forget"   //
	DrawMore = "drawmore" //
	Done     = "done"     //
	// Row and TryRow carry one row of the session's task: Values, its
	// features' values as typed (Row also Label, the index of its
	// label), which the worker checks again with task.Definition.Encode
	// before it keeps or uses them.
	Row    = "row"    // AddRow
	TryRow = "tryrow" // TryRow
	// Leave: the page is being hidden for good (pagehide): the device
	// leaves the session (wire.Leave, then a websocket close with 1000)
	// before the browser ends the worker.
	Leave = "leave"
)

// Messages from the worker to the page (ToPage.Type).
const (
	// Ready: the worker's Go program runs and listens; the page sends
	// nothing before it (messages sent earlier would be lost).
	Ready = "ready"
	// State: a patch of ui.State (Patch), see Diff.
	State = "state"
	// Perf: a performance mark (Duration 0) or measure taken in the
	// worker, at Epoch (milliseconds since the Unix epoch, the sum of
	// the worker's performance.timeOrigin and now()); the page records it
	// in its own timeline, where the end-to-end tests read it.
	Perf = "perf"
	// ClearTry: the model has answered the "try the model" drawing; the
	// page keeps the drawing beside its answer and starts a new one at
	// the next stroke.
	ClearTry = "cleartry"
)

// Kinds of performance entries (PerfNames).
const (
	PerfMark    = "mark"
	PerfMeasure = "measure"
)

// PerfNames are the marks and measures the worker may send, with their
// kind: the page records no other name.
var PerfNames = map[string]string{
	"fl-ready": PerfMark, "fl-train": PerfMark, "fl-warm": PerfMark,
	"fl-prepare": PerfMeasure, "fl-save": PerfMeasure,
}

// Limits on what a message may hold.
const (
	maxCode  = 128
	maxFiles = 64
	// MaxPatch bounds a state patch (the largest is the first one, with
	// the session's description; an accuracy chart of 10,000 rounds is
	// about 400 kB).
	MaxPatch = 4 << 20
	// maxText bounds any message's JSON text but a state patch.
	maxText = 64 << 10
)

// ToWorker is a message from the page to the worker.
type ToWorker struct {
	Type   string      `json:"type"`
	Code   string      `json:"code,omitempty"`
	Origin string      `json:"origin,omitempty"`
	Budget float64     `json:"budget,omitempty"`
	Label  int         `json:"label,omitempty"`
	Pixels []float32   `json:"pixels,omitempty"`
	Values []string    `json:"values,omitempty"`
	UI     *PageFields `json:"ui,omitempty"`
	// NFiles is the number of File objects sent beside a Files message.
	NFiles int `json:"nfiles,omitempty"`
}

// PageFields are the ui.State fields the page writes itself. A nil field
// is unchanged.
type PageFields struct {
	Error      *string `json:"error,omitempty"`
	Nickname   *string `json:"nickname,omitempty"`
	DrawLbl    *int    `json:"draw_label,omitempty"`
	DrawHint   *string `json:"draw_hint,omitempty"`
	Prediction *string `json:"prediction,omitempty"`
}

// ToPage is a message from the worker to the page.
type ToPage struct {
	Type     string          `json:"type"`
	Patch    json.RawMessage `json:"patch,omitempty"`
	Name     string          `json:"name,omitempty"`
	Epoch    float64         `json:"epoch,omitempty"`
	Duration float64         `json:"duration,omitempty"`
}

// ErrUnknown is wrapped by the decoders' error for a message type this
// program does not know (the other side may be newer): ignore it.
var ErrUnknown = errors.New("unknown message type")

// Encode returns m's JSON text.
func Encode(m any) (string, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("bridge: %w", err)
	}
	return string(b), nil
}

// decodeStrict decodes one JSON object into v, refusing unknown fields
// and trailing data.
func decodeStrict(text string, v any) error {
	d := json.NewDecoder(strings.NewReader(text))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data")
	}
	return nil
}

// DecodeToWorker decodes and validates a message from the page.
func DecodeToWorker(text string) (ToWorker, error) {
	var m ToWorker
	if len(text) > maxText {
		return m, fmt.Errorf("bridge: message of %d bytes", len(text))
	}
	if err := decodeStrict(text, &m); err != nil {
		return m, fmt.Errorf("bridge: %w", err)
	}
	if err := m.validate(); err != nil {
		return m, fmt.Errorf("bridge: %s: %w", m.Type, err)
	}
	return m, nil
}

func (m ToWorker) validate() error {
	// Fields a type does not use must be empty.
	var used []string
	switch m.Type {
	case Start:
		if len(m.Code) > maxCode || !utf8.ValidString(m.Code) {
			return errors.New("join code too long or not UTF-8")
		}
		u, err := url.Parse(m.Origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
			return fmt.Errorf("origin %q", m.Origin)
		}
		used = []string{"code", "origin"}
	case UI:
		if m.UI == nil {
			return errors.New("no fields")
		}
		if err := m.UI.validate(); err != nil {
			return err
		}
		used = []string{"ui"}
	case Join:
		if !(m.Budget > 0) || math.IsInf(m.Budget, 0) {
			return fmt.Errorf("budget %v", m.Budget)
		}
		used = []string{"budget"}
	case Drawing, Try:
		if err := checkPixels(m.Pixels); err != nil {
			return err
		}
		used = []string{"pixels"}
		if m.Type == Drawing {
			if m.Label < 0 || m.Label >= local.Classes {
				return fmt.Errorf("label %d", m.Label)
			}
			used = append(used, "label")
		}
	case Row, TryRow:
		if err := checkValues(m.Values); err != nil {
			return err
		}
		used = []string{"values"}
		if m.Type == Row {
			if m.Label < 0 || m.Label >= task.MaxValues {
				return fmt.Errorf("label %d", m.Label)
			}
			used = append(used, "label")
		}
	case Files:
		if m.NFiles < 1 || m.NFiles > maxFiles {
			return fmt.Errorf("%d files", m.NFiles)
		}
		used = []string{"nfiles"}
	case Decline, Demo, Train, Forget, DrawMore, Done, Leave:
	default:
		return fmt.Errorf("%w %q", ErrUnknown, m.Type)
	}
	return onlyFields(m, used)
}

// onlyFields reports an error if m sets a field other than used.
func onlyFields(m ToWorker, used []string) error {
	set := map[string]bool{
		"code": m.Code != "", "origin": m.Origin != "", "budget": m.Budget != 0, "label": m.Label != 0,
		"pixels": m.Pixels != nil, "ui": m.UI != nil, "nfiles": m.NFiles != 0, "values": m.Values != nil,
	}
	for _, f := range used {
		delete(set, f)
	}
	for f, on := range set {
		if on {
			return fmt.Errorf("field %q does not belong to this message", f)
		}
	}
	return nil
}

func checkPixels(p []float32) error {
	if len(p) != local.Features {
		return fmt.Errorf("%d pixels, want %d", len(p), local.Features)
	}
	for i, v := range p {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("pixel %d = %v, want a value in [0, 1]", i, v)
		}
	}
	return nil
}

// checkValues bounds a row: at most task.MaxFeatures values, each valid
// UTF-8 of at most 4 bytes per character of the longest text a task may
// allow.
func checkValues(v []string) error {
	if len(v) < 1 || len(v) > task.MaxFeatures {
		return fmt.Errorf("%d values", len(v))
	}
	for i, s := range v {
		if len(s) > 4*task.MaxTextLength || !utf8.ValidString(s) {
			return fmt.Errorf("value %d: too long or not UTF-8", i)
		}
	}
	return nil
}

// Bounds of the page-written texts (the page's own words are shorter).
const maxPageText = 2048

func (f *PageFields) validate() error {
	for name, s := range map[string]*string{"error": f.Error, "draw_hint": f.DrawHint, "prediction": f.Prediction} {
		if s != nil && (len(*s) > maxPageText || !utf8.ValidString(*s)) {
			return fmt.Errorf("%s: text too long or not UTF-8", name)
		}
	}
	if f.Nickname != nil {
		if err := wire.CheckNickname(*f.Nickname); err != nil {
			return err
		}
	}
	if f.DrawLbl != nil && (*f.DrawLbl < 0 || *f.DrawLbl >= local.Classes) {
		return fmt.Errorf("draw label %d", *f.DrawLbl)
	}
	if f.Error == nil && f.Nickname == nil && f.DrawLbl == nil && f.DrawHint == nil && f.Prediction == nil {
		return errors.New("no fields")
	}
	return nil
}

// DecodeToPage decodes and validates a message from the worker.
func DecodeToPage(text string) (ToPage, error) {
	var m ToPage
	if len(text) > MaxPatch+maxText {
		return m, fmt.Errorf("bridge: message of %d bytes", len(text))
	}
	if err := decodeStrict(text, &m); err != nil {
		return m, fmt.Errorf("bridge: %w", err)
	}
	bad := func(format string, a ...any) (ToPage, error) {
		return m, fmt.Errorf("bridge: %s: "+format, append([]any{m.Type}, a...)...)
	}
	switch m.Type {
	case Ready, ClearTry:
		if m.Patch != nil || m.Name != "" || m.Epoch != 0 || m.Duration != 0 {
			return bad("unexpected fields")
		}
	case State:
		if m.Name != "" || m.Epoch != 0 || m.Duration != 0 {
			return bad("unexpected fields")
		}
		if err := checkPatch(m.Patch); err != nil {
			return bad("%v", err)
		}
	case Perf:
		kind, ok := PerfNames[m.Name]
		if !ok {
			return bad("name %q", m.Name)
		}
		if kind == PerfMark && m.Duration != 0 {
			return bad("a mark with a duration")
		}
		if !(m.Epoch > 0) || math.IsInf(m.Epoch, 0) || !(m.Duration >= 0) || math.IsInf(m.Duration, 0) {
			return bad("times %v, %v", m.Epoch, m.Duration)
		}
		if m.Patch != nil {
			return bad("unexpected fields")
		}
	default:
		return m, fmt.Errorf("bridge: %w %q", ErrUnknown, m.Type)
	}
	return m, nil
}

// checkPatch checks that p is a JSON object that decodes into ui.State
// with no unknown field.
func checkPatch(p json.RawMessage) error {
	if len(p) == 0 || len(p) > MaxPatch {
		return fmt.Errorf("patch of %d bytes", len(p))
	}
	if t := bytes.TrimSpace(p); len(t) == 0 || t[0] != '{' {
		return errors.New("patch is not an object")
	}
	var s ui.State
	return decodeStrict(string(p), &s)
}

// Snapshot is a state as sent: each top-level field's JSON, and for the
// fields that are objects, each of their fields' JSON.
type Snapshot map[string]json.RawMessage

// Take returns s's snapshot.
func Take(s *ui.State) (Snapshot, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("bridge: state: %w", err)
	}
	var m Snapshot
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("bridge: state: %w", err)
	}
	return m, nil
}

// Diff returns the patch that turns a state whose snapshot is prev into
// next: the top-level fields that changed and, inside the fields that
// are objects, only their fields that changed. It returns nil when
// nothing changed. A nil prev gives the whole state.
func Diff(prev, next Snapshot) (json.RawMessage, error) {
	patch := map[string]json.RawMessage{}
	for k, v := range next {
		old, ok := prev[k]
		if ok && bytes.Equal(old, v) {
			continue
		}
		if ok && isObject(old) && isObject(v) {
			var a, b map[string]json.RawMessage
			if json.Unmarshal(old, &a) == nil && json.Unmarshal(v, &b) == nil {
				sub := map[string]json.RawMessage{}
				for sk, sv := range b {
					if ov, ok := a[sk]; !ok || !bytes.Equal(ov, sv) {
						sub[sk] = sv
					}
				}
				enc, err := json.Marshal(sub)
				if err != nil {
					return nil, fmt.Errorf("bridge: patch: %w", err)
				}
				patch[k] = enc
				continue
			}
		}
		patch[k] = v
	}
	if len(patch) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("bridge: patch: %w", err)
	}
	return b, nil
}

func isObject(b json.RawMessage) bool {
	t := bytes.TrimSpace(b)
	return len(t) > 0 && t[0] == '{'
}

// Apply applies a patch made by Diff to s: fields absent from the patch
// keep their values; slices and arrays in it replace s's.
func Apply(s *ui.State, patch json.RawMessage) error {
	if err := checkPatch(patch); err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	return json.Unmarshal(patch, s)
}

// PageChanges returns the page-written fields whose values in cur differ
// from known (nil when none differ).
func PageChanges(known, cur *ui.State) *PageFields {
	var f PageFields
	changed := false
	if cur.Error != known.Error {
		f.Error, changed = ptr(cur.Error), true
	}
	if cur.Nickname != known.Nickname {
		f.Nickname, changed = ptr(cur.Nickname), true
	}
	if cur.DrawLbl != known.DrawLbl {
		f.DrawLbl, changed = ptr(cur.DrawLbl), true
	}
	if cur.Data.DrawHint != known.Data.DrawHint {
		f.DrawHint, changed = ptr(cur.Data.DrawHint), true
	}
	if cur.Train.Prediction != known.Train.Prediction {
		f.Prediction, changed = ptr(cur.Train.Prediction), true
	}
	if !changed {
		return nil
	}
	return &f
}

// ApplyPage sets the fields f holds in s.
func ApplyPage(s *ui.State, f *PageFields) {
	if f == nil {
		return
	}
	if f.Error != nil {
		s.Error = *f.Error
	}
	if f.Nickname != nil {
		s.Nickname = *f.Nickname
	}
	if f.DrawLbl != nil {
		s.DrawLbl = *f.DrawLbl
	}
	if f.DrawHint != nil {
		s.Data.DrawHint = *f.DrawHint
	}
	if f.Prediction != nil {
		s.Train.Prediction = *f.Prediction
	}
}

func ptr[T any](v T) *T { return &v }
