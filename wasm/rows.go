//go:build js && wasm

package main

import (
	"bytes"
	"errors"
	"net/url"
	"strings"

	"browserfl/shared/model"
	"browserfl/shared/task"
	"browserfl/wasm/jsw"
	"browserfl/wasm/local"
	"browserfl/wasm/samples"
	"browserfl/wasm/ui"
)

// A row task's actions: its rows are kept in the data library
// (wasm/samples) as CSV, one record per source; the rows typed in the
// form are their own source (samples.Typed), last in training order.

// AddRow stores one typed row (ui.Controller.AddRow). The page has
// checked it; it is checked again here, and a row that does not fit the
// task is said and never kept.
func (a *app) AddRow(values []string, label int) {
	d := a.task
	if a.store == nil || d == nil {
		return
	}
	_, err := d.Encode(values)
	if err == nil && (label < 0 || label >= d.Classes()) {
		err = &task.RowError{Column: d.Label.Name, Reason: "choose one of the answers"}
	}
	if err != nil {
		a.update(func(s *ui.State) { s.Error = ui.RowMessage(err) })
		return
	}
	go func() {
		r := task.Rows{Values: [][]string{values}, Labels: []int{label}}
		if err := a.lib.AddRows(a.ctx, samples.Typed, r); err != nil {
			a.fail("Saving the row", err)
		}
	}()
}

// loadDemoRows fetches the example rows once and keeps them.
func (a *app) loadDemoRows() {
	go func() {
		var body []byte
		err := a.whileBusy(func() (err error) {
			body, err = jsw.Fetch(a.ctx, a.base+"/api/demo/rows?code="+url.QueryEscape(a.code))
			return err
		})
		var he *jsw.HTTPError
		if errors.As(err, &he) && he.Status == jsw.StatusNotFound {
			a.update(func(s *ui.State) {
				s.Data.Busy = ""
				s.Error = "Your teacher's server has no example rows for this task: type rows or pick a file."
			})
			return
		}
		var r task.Rows
		if err == nil {
			r, _, err = a.task.ReadCSV(bytes.NewReader(body))
		}
		if err == nil {
			err = samples.ShuffleRows(r)
		}
		if err == nil {
			err = a.lib.SaveRows(a.ctx, samples.Demo, r)
		}
		if err != nil {
			a.update(func(s *ui.State) { s.Data.Busy = "" })
			a.fail("Example rows", err)
		}
	}()
}

// addCSV reads picked CSV files in the page with the session's task:
// the rows that fit are added to the files source, the lines that do
// not are listed in words (file, line number, why) and never kept.
func (a *app) addCSV(files []local.File) {
	var all task.Rows
	var refused []string
	for _, f := range files {
		r, bad, err := a.task.ReadCSV(bytes.NewReader(f.Data))
		if err != nil {
			refused = append(refused, f.Name+": "+strings.TrimPrefix(err.Error(), task.ErrCSV.Error()+": "))
			continue
		}
		refused = append(refused, local.RefusedWords(f.Name, bad)...)
		all = local.JoinRows(all, r)
	}
	a.update(func(s *ui.State) {
		s.Data.Refused = refused
		if all.Len() == 0 {
			s.Data.Busy = ""
		}
	})
	if all.Len() == 0 {
		return
	}
	if err := samples.ShuffleRows(all); err != nil {
		a.fail("Files", err)
		return
	}
	if err := a.lib.AddRows(a.ctx, samples.Files, all); err != nil {
		a.fail("Saving files", err)
	}
}

// TryRow answers "try the model" for a row of the task
// (ui.Controller.TryRow): the model's guess, as the label's word. The
// worker runs it on a goroutine of its own, as TryModel.
func (a *app) TryRow(values []string) {
	d := a.task
	if d == nil {
		return
	}
	x, err := d.Encode(values)
	if err != nil {
		a.update(func(s *ui.State) { s.Train.Prediction = ui.RowMessage(err) })
		return
	}
	w, ferr := a.currentModel()
	a.update(func(s *ui.State) {
		s.Error = ""
		m, merr := model.New(a.params.Model, a.params.Features, a.params.Classes)
		if merr != nil || len(w) != m.Dim() {
			s.Train.Prediction = noModel(ferr)
			return
		}
		s.Train.Prediction = "The model says: " + d.Label.Values[m.Predict(w, x)]
	})
}
