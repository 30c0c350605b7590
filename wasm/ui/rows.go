package ui

import (
	"errors"
	"strconv"
	"strings"

	"github.com/vugu/vugu"

	"browserfl/shared/task"
)

// The row form of a row task's session: the fields typed to add a row or
// to try the model, checked against the task before anything is handed
// to the worker.

func kindIs(f task.Feature, k string) bool { return string(f.Kind) == k }

func bound(x *float64) string {
	if x == nil {
		return ""
	}
	return strconv.FormatFloat(*x, 'g', -1, 64)
}

// fieldValues are the values typed in a row form (adding a row, or
// trying the model), by feature.
type fieldValues map[int]string

// value is what is typed in feature i's field.
func (f fieldValues) value(i int) string { return f[i] }

// input takes what is typed in feature i's field.
func (f *fieldValues) input(i int, ev vugu.DOMEvent) {
	if *f == nil {
		*f = fieldValues{}
	}
	(*f)[i] = ev.PropString("target", "value")
}

// values lists the values in feature order, n features.
func (f fieldValues) values(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = f[i]
	}
	return out
}

// textInput is what is typed in one text field, kept by the page
// between renders.
type textInput string

// input takes what is typed in the field.
func (t *textInput) input(ev vugu.DOMEvent) { *t = textInput(ev.PropString("target", "value")) }

// RowMessage says why a row was refused, in words a student can act on
// (the task's *RowError names the column and what to type instead).
func RowMessage(err error) string {
	var re *task.RowError
	if errors.As(err, &re) {
		return "Check this row. " + re.Error() + "."
	}
	return "This row cannot be used: " + err.Error()
}

// checkRow returns what is wrong with a row of d, in words, or "".
func checkRow(d *task.Definition, vals []string) string {
	for i, f := range d.Features {
		if strings.TrimSpace(vals[i]) == "" {
			return "Fill in “" + f.Name + "” first."
		}
	}
	if _, err := d.Encode(vals); err != nil {
		return RowMessage(err)
	}
	return ""
}

// addRow checks the typed row and, if it fits the task, hands it to the
// worker; a row that does not fit is said and never kept or sent.
func (c *Root) addRow() {
	d := c.taskDef()
	if d == nil {
		return
	}
	vals := c.row.values(len(d.Features))
	if msg := checkRow(d, vals); msg != "" {
		c.rowMsg = msg
		return
	}
	if c.rowLabel == "" {
		c.rowMsg = "Choose the answer (“" + d.Label.Name + "”) first."
		return
	}
	lab, err := d.LabelIndex(string(c.rowLabel))
	if err != nil {
		c.rowMsg = RowMessage(err)
		return
	}
	c.Ctl.AddRow(vals, lab)
	c.row, c.rowLabel = nil, ""
	c.rowMsg = "Added. It stays on this device."
}

// tryRow asks the model about the row typed in the try form.
func (c *Root) tryRow() {
	d := c.taskDef()
	if d == nil {
		return
	}
	vals := c.try.values(len(d.Features))
	if msg := checkRow(d, vals); msg != "" {
		c.State.Train.Prediction = msg
		return
	}
	c.Ctl.TryRow(vals)
}

// columns lists the CSV file's column names: the features, then the
// label.
func columns(d *task.Definition) string {
	if d == nil {
		return ""
	}
	names := make([]string, 0, len(d.Features)+1)
	for _, f := range d.Features {
		names = append(names, f.Name)
	}
	return strings.Join(append(names, d.Label.Name), ", ")
}
