package bridge

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"browserfl/wasm/local"
	"browserfl/wasm/ui"
)

func pixels(v float32) []float32 {
	p := make([]float32, local.Features)
	for i := range p {
		p[i] = v
	}
	return p
}

func enc(t *testing.T, m any) string {
	t.Helper()
	s, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDecodeToWorker(t *testing.T) {
	s := func(v string) *string { return &v }
	n := func(v int) *int { return &v }
	over := pixels(0.5)
	over[3] = 1.0001
	for _, tc := range []struct {
		name string
		text string
		ok   bool
	}{
		{"start", enc(t, ToWorker{Type: Start, Code: "abc-123", Origin: "http://127.0.0.1:8080"}), true},
		{"start without code", enc(t, ToWorker{Type: Start, Origin: "https://class.example"}), true},
		{"start with a path", enc(t, ToWorker{Type: Start, Code: "a", Origin: "http://h/x"}), false},
		{"start with a script origin", enc(t, ToWorker{Type: Start, Code: "a", Origin: "javascript:alert(1)"}), false},
		{"start with a long code", enc(t, ToWorker{Type: Start, Code: strings.Repeat("a", maxCode+1), Origin: "http://h"}), false},
		{"join", enc(t, ToWorker{Type: Join, Budget: 8}), true},
		{"join without budget", enc(t, ToWorker{Type: Join}), false},
		{"join with a negative budget", enc(t, ToWorker{Type: Join, Budget: -1}), false},
		{"join with an infinite budget", `{"type":"join","budget":1e999}`, false},
		{"drawing", enc(t, ToWorker{Type: Drawing, Label: 9, Pixels: pixels(1)}), true},
		{"drawing label 10", enc(t, ToWorker{Type: Drawing, Label: 10, Pixels: pixels(1)}), false},
		{"drawing label -1", enc(t, ToWorker{Type: Drawing, Label: -1, Pixels: pixels(1)}), false},
		{"drawing short", enc(t, ToWorker{Type: Drawing, Pixels: pixels(1)[:783]}), false},
		{"drawing NaN", `{"type":"drawing","pixels":` + strings.Replace(enc(t, pixels(0.5)), "0.5", "1e999", 1) + `}`, false},
		{"drawing over 1", enc(t, ToWorker{Type: Drawing, Pixels: over}), false},
		{"try", enc(t, ToWorker{Type: Try, Pixels: pixels(0)}), true},
		{"try with a label", enc(t, ToWorker{Type: Try, Label: 2, Pixels: pixels(0)}), false},
		{"row", enc(t, ToWorker{Type: Row, Values: []string{"1.5", "Ideal"}, Label: 3}), true},
		{"row label 0", enc(t, ToWorker{Type: Row, Values: []string{"Haus"}}), true},
		{"row label 64", enc(t, ToWorker{Type: Row, Values: []string{"Haus"}, Label: 64}), false},
		{"row label -1", enc(t, ToWorker{Type: Row, Values: []string{"Haus"}, Label: -1}), false},
		{"row without values", enc(t, ToWorker{Type: Row, Label: 1}), false},
		{"row of 65 values", enc(t, ToWorker{Type: Row, Values: make([]string, 65)}), false},
		{"row with a value too long", enc(t, ToWorker{Type: Row, Values: []string{strings.Repeat("a", 4001)}}), false},
		{"row with pixels", enc(t, ToWorker{Type: Row, Values: []string{"a"}, Pixels: pixels(0)}), false},
		{"tryrow", enc(t, ToWorker{Type: TryRow, Values: []string{"Haus"}}), true},
		{"tryrow with a label", enc(t, ToWorker{Type: TryRow, Values: []string{"Haus"}, Label: 1}), false},
		{"files", enc(t, ToWorker{Type: Files, NFiles: 2}), true},
		{"files none", enc(t, ToWorker{Type: Files}), false},
		{"files too many", enc(t, ToWorker{Type: Files, NFiles: maxFiles + 1}), false},
		{"ui", enc(t, ToWorker{Type: UI, UI: &PageFields{Error: s(""), DrawLbl: n(3)}}), true},
		{"ui empty", enc(t, ToWorker{Type: UI, UI: &PageFields{}}), false},
		{"ui bad nickname", enc(t, ToWorker{Type: UI, UI: &PageFields{Nickname: s("<script>")}}), false},
		{"ui label 10", enc(t, ToWorker{Type: UI, UI: &PageFields{DrawLbl: n(10)}}), false},
		{"ui long error", enc(t, ToWorker{Type: UI, UI: &PageFields{Error: s(strings.Repeat("x", maxPageText+1))}}), false},
		{"leave", enc(t, ToWorker{Type: Leave}), true},
		{"leave with a budget", enc(t, ToWorker{Type: Leave, Budget: 1}), false},
		{"done", `{"type":"done"}`, true},
		{"unknown field", `{"type":"done","x":1}`, false},
		{"two objects", `{"type":"done"}{"type":"done"}`, false},
		{"not an object", `"done"`, false},
		{"too long", `{"type":"done","code":"` + strings.Repeat("a", maxText) + `"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeToWorker(tc.text)
			if (err == nil) != tc.ok {
				t.Errorf("DecodeToWorker(%.80s): err %v, want ok %v", tc.text, err, tc.ok)
			}
		})
	}
	if _, err := DecodeToWorker(`{"type":"teleport"}`); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown type: %v, want ErrUnknown", err)
	}
}

func TestDecodeToPage(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		ok   bool
	}{
		{"ready", `{"type":"ready"}`, true},
		{"cleartry", `{"type":"cleartry"}`, true},
		{"ready with a patch", `{"type":"ready","patch":{"Error":"x"}}`, false},
		{"state", `{"type":"state","patch":{"Error":"x","Train":{"Round":3}}}`, true},
		{"state unknown field", `{"type":"state","patch":{"Eror":"x"}}`, false},
		{"state unknown nested field", `{"type":"state","patch":{"Train":{"Rounds":3}}}`, false},
		{"state wrong type", `{"type":"state","patch":{"Screen":"train"}}`, false},
		{"state array", `{"type":"state","patch":[1]}`, false},
		{"state without patch", `{"type":"state"}`, false},
		{"perf mark", `{"type":"perf","name":"fl-ready","epoch":1.7e12}`, true},
		{"perf measure", `{"type":"perf","name":"fl-prepare","epoch":1.7e12,"duration":12.5}`, true},
		{"perf mark with duration", `{"type":"perf","name":"fl-ready","epoch":1.7e12,"duration":1}`, false},
		{"perf other name", `{"type":"perf","name":"fl-render","epoch":1.7e12}`, false},
		{"perf negative", `{"type":"perf","name":"fl-save","epoch":1.7e12,"duration":-1}`, false},
		{"perf no time", `{"type":"perf","name":"fl-save"}`, false},
		{"unknown", `{"type":"reload"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeToPage(tc.text)
			if (err == nil) != tc.ok {
				t.Errorf("DecodeToPage(%s): err %v, want ok %v", tc.text, err, tc.ok)
			}
		})
	}
}

// states is a sequence of worker states, each a change of the one
// before, covering top-level fields, nested fields, slices that grow and
// shrink, and arrays.
func states() []ui.State {
	var out []ui.State
	s := ui.State{Screen: ui.ScreenLoading}
	add := func(f func(*ui.State)) {
		f(&s)
		c := s
		c.Session.Labels = append([]string(nil), s.Session.Labels...)
		c.Data.Sources = append([]string(nil), s.Data.Sources...)
		c.Train.Accuracy = append([]ui.Point(nil), s.Train.Accuracy...)
		out = append(out, c)
	}
	add(func(s *ui.State) {})
	add(func(s *ui.State) {
		s.Session = ui.Session{JoinCode: "abc", Algorithm: "nc", Rounds: 40, Epsilon: 7.9, Labels: []string{"a", "b"}}
		s.Budget = 8
	})
	add(func(s *ui.State) { s.Screen = ui.ScreenConsent; s.Error = "over budget" })
	add(func(s *ui.State) { s.Screen = ui.ScreenData; s.Error = "" })
	add(func(s *ui.State) {
		s.Data.Count, s.Data.PerLabel[3], s.Data.Sources = 600, 61, []string{"demo shard (600)"}
	})
	add(func(s *ui.State) {
		s.Screen = ui.ScreenTrain
		s.Train.Status = "Connecting…"
		s.Train.Conn = "connecting"
	})
	add(func(s *ui.State) {
		s.Train.Round, s.Train.Accuracy = 2, []ui.Point{{Round: 1, Accuracy: 0.2}, {Round: 2, Accuracy: 0.4}}
	})
	add(func(s *ui.State) { s.Train.Accuracy = s.Train.Accuracy[:1]; s.Data.PerLabel[3] = 0 })
	add(func(s *ui.State) { s.Session.Labels = nil; s.Data.Sources = nil; s.Train.Accuracy = nil })
	add(func(s *ui.State) { s.Train.Done, s.Train.EpsSpent = true, 1.25 })
	return out
}

// TestDiffApply: the page, applying every patch in turn, renders exactly
// the worker's state; and a patch holds only what changed.
func TestDiffApply(t *testing.T) {
	var page ui.State
	page.Screen = ui.ScreenLoading
	var sent Snapshot
	for i, w := range states() {
		snap, err := Take(&w)
		if err != nil {
			t.Fatal(err)
		}
		patch, err := Diff(sent, snap)
		if err != nil {
			t.Fatal(err)
		}
		sent = snap
		if patch != nil {
			if err := Apply(&page, patch); err != nil {
				t.Fatalf("state %d: %v (patch %s)", i, err, patch)
			}
		}
		if !reflect.DeepEqual(norm(page), norm(w)) {
			t.Fatalf("state %d: page has\n%+v\nworker has\n%+v\n(patch %s)", i, page, w, patch)
		}
	}
	// A change of one nested field sends that field only.
	a := ui.State{Train: ui.Training{Round: 3, Status: "x"}, Error: "e"}
	b := a
	b.Train.Round = 4
	sa, _ := Take(&a)
	sb, _ := Take(&b)
	patch, err := Diff(sa, sb)
	if err != nil {
		t.Fatal(err)
	}
	if string(patch) != `{"Train":{"Round":4}}` {
		t.Errorf("patch %s, want only Train.Round", patch)
	}
	if p, _ := Diff(sb, sb); p != nil {
		t.Errorf("no change gave the patch %s", p)
	}
}

// norm makes empty and nil slices equal (JSON sends both as null or []).
func norm(s ui.State) ui.State {
	if len(s.Session.Labels) == 0 {
		s.Session.Labels = nil
	}
	if len(s.Data.Sources) == 0 {
		s.Data.Sources = nil
	}
	if len(s.Train.Accuracy) == 0 {
		s.Train.Accuracy = nil
	}
	return s
}

// TestPatchKeepsPageFields: a worker patch leaves the fields it does not
// hold as the page has them (the student's unsent edits survive).
func TestPatchKeepsPageFields(t *testing.T) {
	page := ui.State{Screen: ui.ScreenData, DrawLbl: 7, Data: ui.Data{DrawHint: "Draw something first, then add it.", Count: 3}}
	if err := Apply(&page, json.RawMessage(`{"Data":{"Count":4},"Train":{"Status":"x"}}`)); err != nil {
		t.Fatal(err)
	}
	if page.DrawLbl != 7 || page.Data.DrawHint == "" || page.Data.Count != 4 || page.Train.Status != "x" || page.Screen != ui.ScreenData {
		t.Errorf("after the patch: %+v", page)
	}
}

// TestPageChanges: the page sends exactly the page-written fields it
// changed, and applying them makes the worker's copy equal.
func TestPageChanges(t *testing.T) {
	known := ui.State{Screen: ui.ScreenConsent, Error: "over", Nickname: "ana"}
	if f := PageChanges(&known, &known); f != nil {
		t.Errorf("no change: %+v", f)
	}
	cur := known
	cur.Error = ""
	cur.Nickname = "Ana B"
	cur.DrawLbl = 4
	cur.Data.DrawHint = "h"
	cur.Train.Prediction = "Draw something first."
	cur.Screen = ui.ScreenData // not page-written: not sent
	f := PageChanges(&known, &cur)
	if f == nil || f.Error == nil || *f.Error != "" || f.Nickname == nil || f.DrawLbl == nil || f.DrawHint == nil || f.Prediction == nil {
		t.Fatalf("changes %+v", f)
	}
	text := enc(t, ToWorker{Type: UI, UI: f})
	m, err := DecodeToWorker(text)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	worker := known
	ApplyPage(&worker, m.UI)
	cur.Screen = known.Screen
	if !reflect.DeepEqual(worker, cur) {
		t.Errorf("worker %+v, page %+v", worker, cur)
	}
}

// FuzzDecode: neither decoder panics, and what they accept re-encodes
// to a message they accept again.
func FuzzDecode(f *testing.F) {
	f.Add(`{"type":"start","code":"x","origin":"http://h"}`)
	f.Add(`{"type":"state","patch":{"Train":{"Round":1}}}`)
	f.Add(`{"type":"perf","name":"fl-save","epoch":1,"duration":2}`)
	f.Add(`{"type":"ui","ui":{"error":"","draw_label":2}}`)
	f.Add(`{"type":"row","values":["1.5","Ideal"],"label":3}`)
	f.Add(`{"type":"tryrow","values":["Haus"]}`)
	f.Fuzz(func(t *testing.T, text string) {
		if m, err := DecodeToWorker(text); err == nil {
			if _, err := DecodeToWorker(enc(t, m)); err != nil {
				t.Errorf("re-encoded %s: %v", text, err)
			}
		}
		if m, err := DecodeToPage(text); err == nil {
			if _, err := DecodeToPage(enc(t, m)); err != nil {
				t.Errorf("re-encoded %s: %v", text, err)
			}
		}
	})
}
