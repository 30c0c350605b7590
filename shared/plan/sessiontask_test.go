package plan

import (
	"errors"
	"strings"
	"testing"

	"browserfl/shared/task"
	"browserfl/shared/wire"
)

// TestMaxTaskLenAgree: the protocol bounds a session's task by the same
// number the task format does (neither package imports the other).
func TestMaxTaskLenAgree(t *testing.T) {
	if wire.MaxTaskLen != task.MaxDefinitionBytes {
		t.Errorf("wire.MaxTaskLen = %d, task.MaxDefinitionBytes = %d", wire.MaxTaskLen, task.MaxDefinitionBytes)
	}
}

// TestSessionTask: a session's task is read only when it matches the
// shape the session announces; every mismatch is refused with
// ErrTaskMismatch, a malformed definition with task.ErrInvalid.
func TestSessionTask(t *testing.T) {
	b, err := task.LookupBuiltin("tabular")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Def.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	good := wire.SessionParams{
		Model: b.Def.Model, Features: b.Def.Dim(), Classes: b.Def.Classes(),
		Labels: strings.Join(b.Def.Label.Values, ","), Task: string(raw),
	}
	d, err := SessionTask(good)
	if err != nil || d == nil || d.Name != b.Def.Name {
		t.Fatalf("matching session: %v, %v", d, err)
	}
	if d, err := SessionTask(wire.SessionParams{Features: 784, Classes: 10}); d != nil || err != nil {
		t.Errorf("picture session: %v, %v; want nil, nil", d, err)
	}
	cases := []struct {
		name string
		edit func(*wire.SessionParams)
		want error
	}{
		{"features", func(p *wire.SessionParams) { p.Features++ }, ErrTaskMismatch},
		{"classes", func(p *wire.SessionParams) { p.Classes-- }, ErrTaskMismatch},
		{"model", func(p *wire.SessionParams) { p.Model = "mlp" }, ErrTaskMismatch},
		{"labels", func(p *wire.SessionParams) { p.Labels = strings.ToUpper(p.Labels) }, ErrTaskMismatch},
		{"malformed", func(p *wire.SessionParams) { p.Task = string(raw[:len(raw)/2]) }, task.ErrInvalid},
		{"unknown field", func(p *wire.SessionParams) {
			p.Task = strings.Replace(string(raw), `"format"`, `"formats": 1, "format"`, 1)
		}, task.ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := good
			c.edit(&p)
			if d, err := SessionTask(p); d != nil || !errors.Is(err, c.want) {
				t.Errorf("got %v, %v; want %v", d, err, c.want)
			}
		})
	}
}
