package device

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/plan"
	"browserfl/shared/task"
	"browserfl/shared/wire"
)

// rowSession returns a private session of builtin task name, shaped as
// the coordinator announces it (Features = Dim, Classes, Model, Labels).
func rowSession(t *testing.T, name string) (wire.SessionParams, *task.Definition) {
	t.Helper()
	b, err := task.LookupBuiltin(name)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Def.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s := demoSession()
	s.Model, s.Features, s.Classes = b.Def.Model, b.Def.Dim(), b.Def.Classes()
	s.Labels, s.Task = strings.Join(b.Def.Label.Values, ","), string(raw)
	s.Dim = s.Features*s.Classes + s.Classes
	return s, b.Def
}

// rowData encodes one row of the tabular task per label.
func rowData(t *testing.T, d *task.Definition) []dataset.Sample {
	t.Helper()
	rows := task.Rows{}
	for l := range d.Label.Values {
		rows.Values = append(rows.Values, []string{"1.5", "Ideal", "E", "VS1", "61", "57"})
		rows.Labels = append(rows.Labels, l)
	}
	set, err := d.Set("rows", rows)
	if err != nil {
		t.Fatal(err)
	}
	return set.Samples
}

// TestCheckDataTask: a device trains only on data that fits the session:
// rows of the session's own task with its dimensions; pictures in a row
// session, rows in a picture session, rows of another task, a sample of
// the wrong width or a label out of range, and a session whose task does
// not match its announced shape are all refused (ErrWrongData).
func TestCheckDataTask(t *testing.T) {
	tab, def := rowSession(t, "tabular")
	text, textDef := rowSession(t, "text")
	rows := rowData(t, def)
	pics := []dataset.Sample{{X: make([]float32, 784), Label: 3}}
	wide := append([]dataset.Sample{}, rows...)
	wide[1] = dataset.Sample{X: make([]float32, def.Dim()+1), Label: 1}
	badLabel := append([]dataset.Sample{}, rows...)
	badLabel[2] = dataset.Sample{X: rows[2].X, Label: def.Classes()}
	mismatch := tab
	mismatch.Labels = "a,b,c,d"
	other := *def
	other.Title = "Another title"
	cases := []struct {
		name string
		s    wire.SessionParams
		d    *task.Definition
		data []dataset.Sample
		ok   bool
	}{
		{"rows of the session's task", tab, def, rows, true},
		{"pictures in a picture session", demoSession(), nil, pics, true},
		{"rows in a picture session", demoSession(), def, rows, false},
		{"pictures in a row session", tab, nil, pics, false},
		{"rows of another task", text, def, rows, false},
		{"the text task's definition for tabular rows", tab, textDef, rows, false},
		{"a definition that differs in its title", tab, &other, rows, false},
		{"a sample one feature too wide", tab, def, wide, false},
		{"a label out of range", tab, def, badLabel, false},
		{"a session whose labels disagree with its task", mismatch, def, rows, false},
	}
	for _, c := range cases {
		_, err := checkData(c.s, c.d, c.data)
		if c.ok && err != nil {
			t.Errorf("%s: %v, want accepted", c.name, err)
		}
		if !c.ok && !errors.Is(err, ErrWrongData) {
			t.Errorf("%s: %v, want ErrWrongData", c.name, err)
		}
	}
	// The owner's check refuses a session whose task does not match its
	// shape before anything is set up (the page's consent uses it).
	if err := CheckSession(mismatch, Policy{}); !errors.Is(err, ErrRefused) || !errors.Is(err, plan.ErrTaskMismatch) {
		t.Errorf("CheckSession(labels disagree) = %v, want ErrRefused and plan.ErrTaskMismatch", err)
	}
	if err := CheckSession(tab, Policy{}); err != nil {
		t.Errorf("CheckSession(tabular) = %v", err)
	}
}

// TestRuntimeRefusesOtherTask: the runtime sets a session up only for
// data that fits it: resuming a saved tabular session with the text
// task's rows fails (ErrWrongData), with the tabular rows it works.
func TestRuntimeRefusesOtherTask(t *testing.T) {
	tab, def := rowSession(t, "tabular")
	_, textDef := rowSession(t, "text")
	saved, err := json.Marshal(State{DeviceID: "d1", Secret: "s", Session: &tab})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		d  *task.Definition
		ok bool
	}{{def, true}, {textDef, false}} {
		st := &MemStorage{}
		if err := st.Save(context.Background(), saved); err != nil {
			t.Fatal(err)
		}
		_, err := New(context.Background(), Config{URL: "ws://127.0.0.1:1/ws", JoinCode: "c", Storage: st,
			Data: rowData(t, def), Task: c.d})
		if c.ok != (err == nil) || (!c.ok && !errors.Is(err, ErrWrongData)) {
			t.Errorf("task %s: New = %v, want ok = %v (else ErrWrongData)", c.d.Name, err, c.ok)
		}
	}
}
