package plan

import (
	"encoding/json"
	"errors"
	"fmt"
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

// TestWithTaskDropsSignalBound: a session made of a task has no demo
// data, so it keeps no signal bound (the bound assumes every device
// trains on demo shards dealt nearly iid), nor a picture transform
// (its rows are not pictures: devices would refuse the session), and it
// fits in a control message or is refused.
func TestWithTaskDropsSignalBound(t *testing.T) {
	b, err := task.LookupBuiltin("tabular")
	if err != nil {
		t.Fatal(err)
	}
	s := wire.SessionParams{Name: "t", DeadlineMillis: 1000, Algorithm: "nc", Model: "logreg", Features: 784, Classes: 10,
		M: 10, Cohort: 10, Rounds: 20, Batch: 4, Clip: 1, Eta: 1, Rho: 1, DemoShards: true, SignalBound: 0.25,
		Transform: FeaturesScatter}
	got, err := WithTask(s, b.Def)
	if err != nil {
		t.Fatal(err)
	}
	if got.SignalBound != 0 || got.DemoShards {
		t.Errorf("signal bound %v, demo shards %v: want 0, false", got.SignalBound, got.DemoShards)
	}
	if f, err := SessionFeatures(got); got.Transform != "" || f != nil || err != nil {
		t.Errorf("transform %q (%v, %v): want none", got.Transform, f, err)
	}
	// A definition whose session would not fit in a Welcome (a control
	// message) is refused, not sent to devices that cannot read it.
	d := *b.Def
	d.Features = nil
	for i := range 40 {
		vals := make([]string, 40)
		for j := range vals {
			vals[j] = strings.Repeat(string(rune('a'+j%26)), 30) + fmt.Sprint(j)
		}
		d.Features = append(d.Features, task.Feature{Name: fmt.Sprint("q", i), Ask: "Which one?", Kind: task.Category, Values: vals})
	}
	raw, _ := json.Marshal(&d)
	if _, err := WithTask(s, &d); err == nil {
		t.Errorf("a session of a %d-byte task was accepted (control messages hold %d bytes)", len(raw), wire.MaxControlBytes)
	}
}

// TestWithAlgorithm: a teacher switches a session between the two ways
// in which every page adds noise, and nothing else changes; a switch to
// or from any other way (the trusted server, a non-private reference)
// is refused with ErrAlgorithmChoice, and a switch that would make an
// invalid session (a cohort too small to keep a sum's threshold) is
// refused by the session's own checks.
func TestWithAlgorithm(t *testing.T) {
	nc := wire.SessionParams{Name: "t", DeadlineMillis: 1000, Algorithm: "nc", Model: "logreg", Features: 784, Classes: 10,
		Dim: 7850, M: 30, Cohort: 10, Rounds: 20, Batch: 4, Clip: 1, Eta: 1, Rho: 1}
	shared, err := WithAlgorithm(nc, wire.SharedNoiseAlgorithm)
	if err != nil {
		t.Fatal(err)
	}
	want := nc
	want.Algorithm = wire.SharedNoiseAlgorithm
	if shared != want {
		t.Errorf("nc -> shared: %+v; want only the algorithm changed: %+v", shared, want)
	}
	withT := shared
	withT.Threshold, withT.Colluders = 8, 2
	back, err := WithAlgorithm(withT, "nc")
	if err != nil || back != nc {
		t.Errorf("shared (t 8, c 2) -> nc: %+v, %v; want %+v", back, err, nc)
	}
	if same, err := WithAlgorithm(withT, wire.SharedNoiseAlgorithm); err != nil || same != withT {
		t.Errorf("shared -> shared: %+v, %v; want it as it was", same, err)
	}
	trusted := nc
	trusted.Algorithm = "trusted"
	for _, c := range []struct {
		name string
		from wire.SessionParams
		to   string
	}{
		{"nc to trusted", nc, "trusted"},
		{"nc to sgd", nc, "sgd"},
		{"trusted to shared", trusted, wire.SharedNoiseAlgorithm},
		{"nc to an unknown name", nc, "shared2"},
	} {
		if got, err := WithAlgorithm(c.from, c.to); !errors.Is(err, ErrAlgorithmChoice) || got != c.from {
			t.Errorf("%s: %+v, %v; want it refused (%v) and the session as it was", c.name, got, err, ErrAlgorithmChoice)
		}
	}
	one := nc
	one.M, one.Cohort = 1, 1
	if _, err := WithAlgorithm(one, wire.SharedNoiseAlgorithm); err == nil {
		t.Errorf("a cohort of 1 made a shared-noise session")
	}
}

// TestWithTaskBoundsTheModel: a task whose model would have more than
// MaxTaskModelDim parameters (the network on four text features of
// 16,384 buckets: 65,536 features, 4.2 million parameters) is refused as
// an invalid task; the same features with logistic regression (196,611
// for three answers: still over) and with fewer buckets (1,024 each,
// 4,096 features: 12,291) show where the bound falls.
func TestWithTaskBoundsTheModel(t *testing.T) {
	s := wire.SessionParams{Name: "t", DeadlineMillis: 1000, Algorithm: "nc", Model: "logreg", Features: 784, Classes: 10,
		M: 10, Cohort: 10, Rounds: 20, Batch: 4, Clip: 1, Eta: 1, Rho: 1}
	def := func(model string, buckets int) *task.Definition {
		raw := `{"format": "browserfl.task/v1", "name": "big", "title": "Big", "about": "Many words.", "features": [`
		for i := range 4 {
			if i > 0 {
				raw += ", "
			}
			raw += fmt.Sprintf(`{"name": "w%d", "ask": "Words %d?", "kind": "text", "max_length": 20, "char_grams": [1, 2], "buckets": %d}`, i, i, buckets)
		}
		raw += `], "label": {"name": "a", "ask": "Which?", "values": ["x", "y", "z"]}, "model": "` + model + `"}`
		d, err := task.Parse([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		model   string
		buckets int
		ok      bool
	}{{"mlp", task.MaxBuckets, false}, {"logreg", task.MaxBuckets, false}, {"logreg", 1024, true}, {"mlp", 1024, false}, {"mlp", 256, true}} {
		got, err := WithTask(s, def(tc.model, tc.buckets))
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, task.ErrInvalid)) {
			t.Errorf("%s on 4 x %d buckets: d = %d, %v; want ok %v (or task.ErrInvalid)", tc.model, tc.buckets, got.Dim, err, tc.ok)
		}
	}
}

// TestWithTaskRefusesClearly: a task whose words are mostly <, > and &
// (30 questions of 80, an about of 399) is under the size a task file
// may have, but not once written into the session, where each of those
// characters takes six bytes (json.Marshal's form, which stored sessions
// and devices hold): it is refused as an invalid task that says so, not
// as a bad frame.
func TestWithTaskRefusesClearly(t *testing.T) {
	b, err := task.LookupBuiltin("tabular")
	if err != nil {
		t.Fatal(err)
	}
	d := *b.Def
	d.About = strings.Repeat("<>&", 133)
	d.Features = nil
	for i := range 30 {
		lo, hi := 0.0, 1.0
		d.Features = append(d.Features, task.Feature{Name: fmt.Sprintf("f%d", i), Ask: strings.Repeat("<>&", 26) + "<?", Kind: task.Number, Min: &lo, Max: &hi})
	}
	if file, err := json.Marshal(&d); err != nil || len(file) <= wire.MaxTaskLen {
		t.Fatalf("the task is %d bytes in the session (%v): not a test of its escapes", len(file), err)
	}
	s := wire.SessionParams{Name: "t", DeadlineMillis: 1000, Algorithm: "nc", Model: "logreg", Features: 784, Classes: 10,
		M: 10, Cohort: 10, Rounds: 20, Batch: 4, Clip: 1, Eta: 1, Rho: 1}
	_, err = WithTask(s, &d)
	if !errors.Is(err, task.ErrInvalid) || !strings.Contains(err.Error(), "once written into the session") || errors.Is(err, wire.ErrBadFrame) {
		t.Errorf("WithTask = %v; want an invalid task that says how long it is once written into the session", err)
	}
}
