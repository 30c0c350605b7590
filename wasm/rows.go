//go:build js && wasm

package main

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"browserfl/shared/model"
	"browserfl/shared/task"
	"browserfl/wasm/jsw"
	"browserfl/wasm/local"
	"browserfl/wasm/ui"
)

// The rows of a row task are kept as CSV text (task.Definition.WriteCSV),
// one record per source: data/<source>/rows. Sources in training order:
// the example rows, the picked files, the rows typed in the form (typed
// last, so rows can still be typed once some are used).
const typedSource = "typed"

// errSessionRefused is wrapped when the page will not join a session
// whatever happens (its task does not match its shape): said on the
// page, not retried.
var errSessionRefused = errors.New("this page will not join this session")

// errNoProtection is returned for a session that adds no noise (a
// non-private reference algorithm): the page says so (ui.NoProtection)
// and does not join.
var errNoProtection = errors.New("the session adds no noise")

// shuffleRows permutes a new source's rows once, with a seed from
// crypto/rand, before they are stored (see local.ShuffleRows).
func shuffleRows(r task.Rows) error {
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return fmt.Errorf("shuffle seed: %w", err)
	}
	local.ShuffleRows(r, seed)
	return nil
}

// rowsOf returns the stored rows of src.
func (a *app) rowsOf(src string) task.Rows {
	a.setsMu.Lock()
	defer a.setsMu.Unlock()
	return a.rows[src]
}

// setRows records the rows of src (already stored) and their encoding.
func (a *app) setRows(src string, r task.Rows) error {
	set, err := a.task.Set(src, r)
	if err != nil {
		return err
	}
	a.setsMu.Lock()
	a.rows[src] = r
	a.setsMu.Unlock()
	a.setSource(src, set)
	return nil
}

// saveRows stores the rows of src as CSV (replacing what was there) and
// publishes them.
func (a *app) saveRows(src string, r task.Rows) error {
	var b bytes.Buffer
	if err := a.task.WriteCSV(&b, r); err != nil {
		return err
	}
	if err := a.store.Put(a.ctx, map[string][]byte{keyData + src + "/rows": b.Bytes()}); err != nil {
		return err
	}
	if err := a.setRows(src, r); err != nil {
		return err
	}
	a.publishData()
	return nil
}

// loadRows reads a source's stored rows (every one was checked before
// it was stored; a row the task refuses now is left out).
func (a *app) loadRows(src string, b []byte) error {
	r, _, err := a.task.ReadCSV(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return a.setRows(src, r)
}

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
		a.rowsMu.Lock()
		defer a.rowsMu.Unlock()
		r := local.JoinRows(a.rowsOf(typedSource), task.Rows{Values: [][]string{values}, Labels: []int{label}})
		if err := a.saveRows(typedSource, r); err != nil {
			a.fail("Saving the row", err)
		}
	}()
}

// loadDemoRows fetches the example rows once and keeps them.
func (a *app) loadDemoRows() {
	go func() {
		body, err := jsw.Fetch(a.ctx, a.base+"/api/demo/rows?code="+url.QueryEscape(a.code))
		var he *jsw.HTTPError
		if errors.As(err, &he) && he.Status == http.StatusNotFound {
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
			err = shuffleRows(r)
		}
		if err == nil {
			a.rowsMu.Lock()
			err = a.saveRows("demo", r)
			a.rowsMu.Unlock()
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
	if err := shuffleRows(all); err != nil {
		a.fail("Files", err)
		return
	}
	a.rowsMu.Lock()
	defer a.rowsMu.Unlock()
	if err := a.saveRows("files", local.JoinRows(a.rowsOf("files"), all)); err != nil {
		a.fail("Saving files", err)
	}
}

// TryRow answers "try the model" for a row of the task
// (ui.Controller.TryRow): the model's guess, as the label's word.
func (a *app) TryRow(values []string) {
	d := a.task
	if d == nil {
		return
	}
	var w []float64
	if a.trainer != nil {
		a.trainer.mu.Lock()
		w = append(w, a.trainer.x...)
		a.trainer.mu.Unlock()
	}
	x, err := d.Encode(values)
	a.update(func(s *ui.State) {
		if err != nil {
			s.Train.Prediction = ui.RowMessage(err)
			return
		}
		s.Error = ""
		m, merr := model.New(a.params.Model, a.params.Features, a.params.Classes)
		if merr != nil || len(w) != m.Dim() {
			s.Train.Prediction = "No model yet: wait for the first round."
			return
		}
		s.Train.Prediction = "The model says: " + d.Label.Values[m.Predict(w, x)]
	})
}
