package ui

import (
	"strings"
	"testing"

	"browserfl/shared/task"
)

// rowCtl records the rows the page hands on.
type rowCtl struct {
	nopCtl
	added  [][]string
	labels []int
	tried  [][]string
}

func (r *rowCtl) AddRow(v []string, l int) {
	r.added, r.labels = append(r.added, v), append(r.labels, l)
}
func (r *rowCtl) TryRow(v []string) { r.tried = append(r.tried, v) }

var _ Controller = (*rowCtl)(nil)

// taskSession is a session of the built-in task name.
func taskSession(t *testing.T, name string) (Session, *task.Definition) {
	t.Helper()
	b, err := task.LookupBuiltin(name)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Def.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s := session()
	s.Task, s.Labels, s.DemoRows = string(raw), b.Def.Label.Values, true
	return s, b.Def
}

// TestRenderTaskScreens: a row-task session shows the task in words
// before consent and speaks of rows, the data screen has a form field of
// the right kind and bounds per column and the answer select, the
// example rows only when the coordinator has them, the lines a file had
// refused, and "try the model" as a form; the picture controls are gone.
func TestRenderTaskScreens(t *testing.T) {
	tab, def := taskSession(t, "tabular")
	text, _ := taskSession(t, "text")
	noDemo := tab
	noDemo.DemoRows = false
	tests := []struct {
		name   string
		state  State
		want   []string
		absent []string
	}{
		{"consent", State{Screen: ScreenConsent, Session: tab, Budget: 12},
			[]string{`id="task-words"`, strings.ReplaceAll(def.Describe(), "'", "&#39;"), "Your rows stay on this device.", "Each row is used once",
				"one of your rows"},
			[]string{"recognise pictures", "Each picture", "your pictures"}},
		{"data", State{Screen: ScreenData, Session: tab, Data: Data{Count: 2, Sources: []string{"typed (2)"}}},
			[]string{`id="row-0"`, `type="number"`, `min="0.2"`, `max="3"`, `id="row-1"`, `>Very Good</option>`, `id="row-label"`,
				`>$2500 to $5000</option>`, `id="row-add"`, `id="demo-btn"`, "Use example rows", `id="files"`, "carat, cut, color, clarity, depth, table, price",
				"rows stored", "typed (2)"},
			[]string{`id="draw"`, "pictures", `id="refused"`}},
		{"text field", State{Screen: ScreenData, Session: text},
			[]string{`id="row-0"`, `type="text"`, `maxlength="40"`, `>Italian</option>`}, []string{`id="row-0" type="number"`}},
		{"no example rows", State{Screen: ScreenData, Session: noDemo}, []string{`id="row-add"`, `id="files"`}, []string{`id="demo-btn"`}},
		{"after use: typing only", State{Screen: ScreenData, Session: tab, Data: Data{Count: 30, Used: 28}},
			[]string{`id="row-add"`, "Why only typing?"}, []string{`id="demo-btn"`, `id="files"`}},
		{"refused lines", State{Screen: ScreenData, Session: tab, Data: Data{Refused: []string{"mine.csv, line 3: carat: 9 is outside the range; type a number from 0.2 to 3"}}},
			[]string{`id="refused"`, "mine.csv, line 3: carat: 9 is outside the range"}, nil},
		{"training", State{Screen: ScreenTrain, Session: tab, Data: Data{Count: 5, Used: 2}, Train: Training{Prediction: "The model says: over $5000"}},
			[]string{`id="try-0"`, `id="try-btn"`, "The model says: over $5000", "Rows used", "Leave and delete my rows"},
			[]string{`id="try"`, "Pictures used"}},
		{"used up", State{Screen: ScreenTrain, Session: tab, Train: Training{Done: true, UsedUp: true}},
			[]string{"All your rows have been used", "Add more rows"}, []string{"Draw more"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			html := render(t, &tc.state)
			for _, w := range tc.want {
				if !strings.Contains(html, w) {
					t.Errorf("missing %q", w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(html, a) {
					t.Errorf("unexpected %q", a)
				}
			}
		})
	}
}

// TestTaskPlainWords: the task screens carry none of the precise terms
// outside Details either.
func TestTaskPlainWords(t *testing.T) {
	tab, _ := taskSession(t, "tabular")
	for _, st := range []State{
		{Screen: ScreenConsent, Session: tab, Budget: 12},
		{Screen: ScreenData, Session: tab, Data: Data{Count: 1, Refused: []string{"a.csv, line 2: cut: \"x\" is not one of the choices: Fair"}}},
		{Screen: ScreenTrain, Session: tab, Train: Training{EpsSpent: 3, EpsMost: 10.6, EpsBudget: 12, Delta: 1e-5}},
	} {
		html := render(t, &st)
		for strings.Contains(html, "<details") {
			i := strings.Index(html, "<details")
			j := strings.Index(html[i:], "</details>")
			if j < 0 {
				t.Fatal("unclosed details")
			}
			html = html[:i] + html[i+j+len("</details>"):]
		}
		for _, term := range []string{"IndexedDB", "δ", "zCDP", "clip", "Clip", "Gaussian", "delta", "gradient", "weights", "vector",
			"feature", "encode", "hash", "n-gram", "CSV reader"} {
			if strings.Contains(html, term) {
				t.Errorf("screen %d shows %q outside Details", st.Screen, term)
			}
		}
	}
}

// TestAddRowChecks: the page hands on only rows that fit the task, with
// their answer's index; an empty field, a value out of range, an unknown
// choice and a row without an answer are said in words and never handed
// on; the form empties after a row is added.
func TestAddRowChecks(t *testing.T) {
	tab, _ := taskSession(t, "tabular")
	good := map[int]string{0: "1.5", 1: "Ideal", 2: "E", 3: "VS1", 4: "61", 5: "57"}
	with := func(i int, v string) map[int]string {
		m := map[int]string{}
		for k, x := range good {
			m[k] = x
		}
		m[i] = v
		return m
	}
	for _, tc := range []struct {
		name  string
		row   map[int]string
		label string
		msg   string
	}{
		{"empty field", with(4, " "), "over $5000", "Fill in “depth” first."},
		{"out of range", with(0, "4"), "over $5000", "Check this row. carat: 4 is outside the range; type a number from 0.2 to 3."},
		{"not a number", with(5, "wide"), "over $5000", `Check this row. table: "wide" is not a number; type a number from 43 to 95.`},
		{"unknown choice", with(1, "Superb"), "over $5000", `Check this row. cut: "Superb" is not one of the choices: Fair, Good, Very Good, Premium, Ideal.`},
		{"no answer", good, "", "Choose the answer (“price”) first."},
		{"unknown answer", good, "free", `Check this row. price: "free" is not one of the choices`},
	} {
		ctl := &rowCtl{}
		c := &Root{State: &State{Screen: ScreenData, Session: tab}, Ctl: ctl, row: tc.row, rowLabel: textInput(tc.label)}
		c.addRow()
		if len(ctl.added) != 0 || !strings.HasPrefix(c.rowMsg, tc.msg) {
			t.Errorf("%s: handed on %d rows, said %q; want none and %q", tc.name, len(ctl.added), c.rowMsg, tc.msg)
		}
	}
	ctl := &rowCtl{}
	c := &Root{State: &State{Screen: ScreenData, Session: tab}, Ctl: ctl, row: good, rowLabel: "$2500 to $5000"}
	c.addRow()
	if len(ctl.added) != 1 || strings.Join(ctl.added[0], ",") != "1.5,Ideal,E,VS1,61,57" || ctl.labels[0] != 2 {
		t.Fatalf("good row: handed on %q with labels %v", ctl.added, ctl.labels)
	}
	if len(c.row) != 0 || c.rowLabel != "" || !strings.HasPrefix(c.rowMsg, "Added.") {
		t.Errorf("after adding: row %v, label %q, said %q", c.row, c.rowLabel, c.rowMsg)
	}
	// Trying the model: a bad row is answered in words, a good one asked.
	c.try = with(0, "9")
	c.tryRow()
	if len(ctl.tried) != 0 || !strings.Contains(c.State.Train.Prediction, "carat: 9 is outside the range") {
		t.Errorf("try with a bad row: asked %d, said %q", len(ctl.tried), c.State.Train.Prediction)
	}
	c.try = good
	c.tryRow()
	if len(ctl.tried) != 1 {
		t.Errorf("try with a good row: asked %d times", len(ctl.tried))
	}
}
