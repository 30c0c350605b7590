package task

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"browserfl/shared/dataset"
)

// MaxCSVBytes bounds a CSV file a page or a device reads (a demo shard or
// a file a student picked).
const MaxCSVBytes = 16 << 20

// Rows are a task's rows as a person would type them: Values[i] holds
// one string per feature, in the order of Definition.Features, and
// Labels[i] the index of its label value.
type Rows struct {
	Values [][]string
	Labels []int
}

// Len is the number of rows (of labels; Set and WriteCSV refuse rows
// whose values and labels differ in number).
func (r Rows) Len() int { return len(r.Labels) }

// LineError is a CSV row that was refused: its line and why.
type LineError struct {
	Line int
	Err  error
}

func (e LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e LineError) Unwrap() error { return e.Err }

// ErrCSV is wrapped by errors about a CSV file as a whole (its size, its
// header); single bad rows are LineErrors instead.
var ErrCSV = errors.New("task: CSV")

// ReadCSV reads rows from a CSV file whose first line names the columns:
// every feature and the label, in any order, case and spaces around a
// name ignored; other columns are an error. A row that does not fit the
// task (a wrong value, a missing value, an unknown label) is left out and
// reported in refused, so one mistyped row does not lose the others; an
// input over MaxCSVBytes or without a usable header is an error.
func (d *Definition) ReadCSV(r io.Reader) (rows Rows, refused []LineError, err error) {
	lr := &io.LimitedReader{R: r, N: MaxCSVBytes + 1}
	cr := csv.NewReader(lr)
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true // a stray quote (5"11) is part of the value
	head, err := cr.Read()
	if err != nil {
		return rows, nil, fmt.Errorf("%w: reading the first line (the column names): %v", ErrCSV, err)
	}
	col, err := d.columns(head)
	if err != nil {
		return rows, nil, err
	}
	for {
		rec, err := cr.Read()
		if lr.N <= 0 {
			return Rows{}, nil, fmt.Errorf("%w: over %d bytes", ErrCSV, MaxCSVBytes)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			// A line the CSV reader cannot parse is refused on its own;
			// the reader goes on after it.
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return rows, refused, fmt.Errorf("%w: %v", ErrCSV, err)
			}
			refused = refuse(refused, LineError{pe.StartLine, &RowError{Reason: "this line cannot be read as CSV: " + pe.Err.Error()}})
			continue
		}
		if len(rec) == 0 {
			continue
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(head) {
			refused = refuse(refused, LineError{line, &RowError{Reason: fmt.Sprintf("%d values, the first line names %d columns", len(rec), len(head))}})
			continue
		}
		vals := make([]string, len(d.Features))
		for i := range d.Features {
			vals[i] = rec[col[i]]
		}
		if _, err := d.Encode(vals); err != nil {
			refused = refuse(refused, LineError{line, err})
			continue
		}
		lab, err := d.LabelIndex(rec[col[len(d.Features)]])
		if err != nil {
			refused = refuse(refused, LineError{line, err})
			continue
		}
		rows.Values = append(rows.Values, vals)
		rows.Labels = append(rows.Labels, lab)
	}
	return rows, refused, nil
}

// MaxRefused is how many refused lines ReadCSV reports one by one; the
// rest are counted in one last LineError (Line 0).
const MaxRefused = 100

// errMore is the last LineError's reason when more lines were refused.
type errMore struct{ n int }

func (e *errMore) Error() string { return fmt.Sprintf("and %d more lines refused", e.n) }

// refuse adds e to refused, keeping at most MaxRefused of them and a
// count of the rest.
func refuse(refused []LineError, e LineError) []LineError {
	if len(refused) < MaxRefused {
		return append(refused, e)
	}
	if len(refused) == MaxRefused {
		return append(refused, LineError{0, &errMore{1}})
	}
	refused[MaxRefused].Err.(*errMore).n++
	return refused
}

// columns maps each feature (then the label) to its column in head.
func (d *Definition) columns(head []string) ([]int, error) {
	want := make([]string, 0, len(d.Features)+1)
	for _, f := range d.Features {
		want = append(want, f.Name)
	}
	want = append(want, d.Label.Name)
	at := map[string]int{}
	for i, h := range head {
		k := normal(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := at[k]; dup {
			return nil, fmt.Errorf("%w: the column %q is named twice", ErrCSV, h)
		}
		at[k] = i
	}
	col := make([]int, len(want))
	for i, w := range want {
		j, ok := at[normal(w)]
		if !ok {
			return nil, fmt.Errorf("%w: the first line has no column %q (it needs %s)", ErrCSV, w, strings.Join(want, ", "))
		}
		col[i] = j
		delete(at, normal(w))
	}
	for h := range at {
		return nil, fmt.Errorf("%w: the column %q is not part of this task (it needs %s)", ErrCSV, h, strings.Join(want, ", "))
	}
	return col, nil
}

// WriteCSV writes rows with a first line of column names (the features,
// then the label): the form ReadCSV reads.
func (d *Definition) WriteCSV(w io.Writer, rows Rows) error {
	if len(rows.Values) != len(rows.Labels) {
		return fmt.Errorf("task: %d rows of values and %d labels", len(rows.Values), len(rows.Labels))
	}
	cw := csv.NewWriter(w)
	head := make([]string, 0, len(d.Features)+1)
	for _, f := range d.Features {
		head = append(head, f.Name)
	}
	if err := cw.Write(append(head, d.Label.Name)); err != nil {
		return err
	}
	rec := make([]string, len(d.Features)+1)
	for i, v := range rows.Values {
		l := rows.Labels[i]
		if len(v) != len(d.Features) || l < 0 || l >= d.Classes() {
			return fmt.Errorf("task: row %d does not fit the task", i)
		}
		copy(rec, v)
		rec[len(d.Features)] = d.Label.Values[l]
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Set encodes rows into a data set of the task's dimensions.
func (d *Definition) Set(name string, rows Rows) (dataset.Set, error) {
	if len(rows.Values) != len(rows.Labels) {
		return dataset.Set{}, fmt.Errorf("task: %d rows of values and %d labels", len(rows.Values), len(rows.Labels))
	}
	s := dataset.Set{Name: name, Features: d.Dim(), Classes: d.Classes(), Samples: make([]dataset.Sample, rows.Len())}
	for i, v := range rows.Values {
		x, err := d.Encode(v)
		if err != nil {
			return dataset.Set{}, fmt.Errorf("task: row %d: %w", i, err)
		}
		s.Samples[i] = dataset.Sample{X: x, Label: rows.Labels[i]}
	}
	return s, s.Validate()
}
