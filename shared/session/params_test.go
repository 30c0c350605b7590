package session

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"testing"
)

// TestJSONRoundTrip: every field of Params, set alone, is written under
// its wire name (the protocol's; devices in the field and the stored
// sessions read it) and read back to the same value.
func TestJSONRoundTrip(t *testing.T) {
	tests := []struct {
		field, key string
		p          Params
	}{
		{"Name", "name", Params{Name: "class 4b"}},
		{"Dim", "dim", Params{Dim: 7850}},
		{"DeadlineMillis", "deadline_ms", Params{DeadlineMillis: 20000}},
		{"Trusted", "trusted", Params{Trusted: true}},
		{"DemoShards", "demo_shards", Params{DemoShards: true}},
		{"Algorithm", "algorithm", Params{Algorithm: "nc"}},
		{"Model", "model", Params{Model: "logreg"}},
		{"Features", "features", Params{Features: 784}},
		{"Classes", "classes", Params{Classes: 10}},
		{"M", "M", Params{M: 30}},
		{"Cohort", "cohort", Params{Cohort: 10}},
		{"Rounds", "rounds", Params{Rounds: 200}},
		{"Batch", "batch", Params{Batch: 32}},
		{"MaxReleases", "max_releases", Params{MaxReleases: 150}},
		{"Clip", "clip", Params{Clip: 1.5}},
		{"G", "G", Params{G: 2.5}},
		{"L", "L", Params{L: 3.5}},
		{"Eta", "eta", Params{Eta: 0.02}},
		{"Diameter", "diameter", Params{Diameter: 0.1}},
		{"Rho", "rho_p", Params{Rho: 1.25}},
		{"Epsilon", "epsilon", Params{Epsilon: 7.92}},
		{"Delta", "delta", Params{Delta: 1e-5}},
		{"Compressor", "compressor", Params{Compressor: "randk:0.1+ef"}},
		{"LocalSize", "local_size", Params{LocalSize: 600}},
		{"SnapshotProb", "snapshot_prob", Params{SnapshotProb: 0.05}},
		{"ShiftStep", "shift_step", Params{ShiftStep: 0.3}},
		{"LocalSteps", "local_steps", Params{LocalSteps: 4}},
		{"LocalEpochs", "local_epochs", Params{LocalEpochs: 2}},
		{"SignalBound", "signal_bound", Params{SignalBound: 0.25}},
		{"Threshold", "threshold", Params{Threshold: 7}},
		{"Colluders", "colluders", Params{Colluders: 2}},
		{"Labels", "labels", Params{Labels: "cat,dog"}},
		{"Task", "task", Params{Task: `{"format":"browserfl.task/v1"}`}},
		{"Transform", "transform", Params{Transform: "scatter"}},
	}
	zero := keys(t, Params{})
	var fields []string
	for _, tc := range tests {
		fields = append(fields, tc.field)
		if reflect.ValueOf(tc.p).FieldByName(tc.field).IsZero() {
			t.Errorf("%s: the case does not set it", tc.field)
		}
		b, err := json.Marshal(tc.p)
		if err != nil {
			t.Fatalf("%s: %v", tc.field, err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		// The field's key carries the value; every other key is as in
		// the zero session's JSON.
		for k, v := range m {
			if k != tc.key && string(v) != string(zero[k]) {
				t.Errorf("%s: written under %q (%s), want %q", tc.field, k, v, tc.key)
			}
		}
		if _, ok := m[tc.key]; !ok {
			t.Errorf("%s: no key %q in %s", tc.field, tc.key, b)
		}
		var back Params
		if err := json.Unmarshal(b, &back); err != nil || back != tc.p {
			t.Errorf("%s: read back %+v, %v; want %+v", tc.field, back, err, tc.p)
		}
	}
	var all []string
	for f := range reflect.TypeFor[Params]().Fields() {
		all = append(all, f.Name)
	}
	if !slices.Equal(fields, all) {
		t.Errorf("the table covers %q, Params has %q", fields, all)
	}
}

// keys returns p's JSON as a map from key to value.
func keys(t *testing.T, p Params) map[string]json.RawMessage {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDecodeProtocolFixture: a session as the protocol writes it in a
// Welcome (testdata/welcome-session.json, every field set, as
// wire.EncodeControl wrote it for the devices and the coordinator's
// stores) reads, with no unknown key, into the same Params, and Params
// writes the same bytes back.
func TestDecodeProtocolFixture(t *testing.T) {
	b, err := os.ReadFile("testdata/welcome-session.json")
	if err != nil {
		t.Fatal(err)
	}
	want := Params{Name: "fixture", Dim: 7850, DeadlineMillis: 20000, Trusted: true, DemoShards: true,
		Algorithm: "nc", Model: "logreg", Features: 784, Classes: 10, M: 30, Cohort: 10, Rounds: 200, Batch: 32,
		MaxReleases: 150, Clip: 1.5, G: 2.5, L: 3.5, Eta: 0.02, Diameter: 0.1, Rho: 1.25, Epsilon: 7.92, Delta: 1e-5,
		Compressor: "randk:0.1+ef", LocalSize: 600, SnapshotProb: 0.05, ShiftStep: 0.3, LocalSteps: 4, LocalEpochs: 2,
		SignalBound: 0.25, Threshold: 7, Colluders: 2, Labels: "a,b,c,d,e,f,g,h,i,j", Task: `{"format":"browserfl.task/v1"}`, Transform: "scatter"}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var got Params
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if got != want {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	out, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, bytes.TrimSpace(b)) {
		t.Errorf("written back:\n%s\nwant the fixture:\n%s", out, bytes.TrimSpace(b))
	}
}

// TestDifferences names each field that differs by its JSON name, with
// both values, and only those.
func TestDifferences(t *testing.T) {
	was := Params{Algorithm: "nc", Rounds: 300, Clip: 1, Task: `{"name":"pets"}`}
	now := was
	if d := Differences(was, now); len(d) != 0 {
		t.Errorf("the same parameters: %q", d)
	}
	now.Rounds, now.Clip, now.Task = 100, 2, `{"name":"cats"}`
	got := Differences(was, now)
	want := []string{"rounds 300, now 100", "clip 1, now 2", "task (another definition)"}
	if !slices.Equal(got, want) {
		t.Errorf("Differences = %q, want %q", got, want)
	}
}
