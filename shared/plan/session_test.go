package plan

import (
	"reflect"
	"testing"

	"browserfl/shared/optim"
	"browserfl/shared/wire"
)

// The session's public parameters have two forms: wire.SessionParams (what
// the coordinator sends and devices in the field parse) and optim.Params
// (what the algorithms read). FromSession joins them by hand; the lists
// below are every intended difference, and the tests fail on any other.

// wireOnly are the wire fields with no optim.Params counterpart, and why.
var wireOnly = map[string]string{
	"Name":           "the session's display name",
	"Dim":            "the model's dimension, derived from Model, Features and Classes (model.New); the wire carries it to bound frames",
	"DeadlineMillis": "the round deadline: transport, not algorithm",
	"Trusted":        "informational; devices derive it from Algorithm (optim.Params.Trusted)",
	"DemoShards":     "whether the coordinator serves demo data shards",
	"Labels":         "the classes' display names",
	"Task":           "the task definition (shared/task): how rows become the Features inputs; devices parse it, the algorithms never read it",
	"Transform":      "the features the model reads (SessionFeatures): devices compute them from their pictures before training; the algorithms see only Features-long inputs",
}

// optimOnly are the optim.Params fields with no wire counterpart (none:
// every algorithm parameter travels).
var optimOnly = map[string]string{}

// renamed maps a wire field to its optim.Params counterpart where the names
// differ; every other counterpart has the same name.
var renamed = map[string]string{
	"RhoPaper": "Rho",
}

// counterparts returns the wire field name of every optim.Params field that
// has one, keyed by the optim name.
func counterparts(t *testing.T) map[string]string {
	t.Helper()
	wt, ot := reflect.TypeFor[wire.SessionParams](), reflect.TypeFor[optim.Params]()
	pairs := map[string]string{}
	for f := range wt.Fields() {
		name, ok := renamed[f.Name]
		if !ok {
			name = f.Name
		}
		of, has := ot.FieldByName(name)
		_, only := wireOnly[f.Name]
		switch {
		case only && has:
			t.Errorf("wire field %s is listed as wire-only but optim.Params has %s", f.Name, name)
		case only:
		case !has:
			t.Errorf("wire field %s has no optim.Params counterpart %s: add one, or list it in wireOnly with why", f.Name, name)
		case of.Type != f.Type:
			t.Errorf("wire field %s is %v, optim.Params.%s is %v", f.Name, f.Type, name, of.Type)
		default:
			pairs[name] = f.Name
		}
	}
	for f := range ot.Fields() {
		_, paired := pairs[f.Name]
		_, only := optimOnly[f.Name]
		if paired == only {
			t.Errorf("optim.Params.%s: paired with a wire field %v, listed in optimOnly %v: want exactly one", f.Name, paired, only)
		}
	}
	for _, list := range []map[string]string{wireOnly, renamed} {
		for name := range list {
			if _, ok := wt.FieldByName(name); !ok {
				t.Errorf("%s is listed but wire.SessionParams has no such field", name)
			}
		}
	}
	for name := range optimOnly {
		if _, ok := ot.FieldByName(name); !ok {
			t.Errorf("%s is listed but optim.Params has no such field", name)
		}
	}
	return pairs
}

// distinct sets every field of *p to a value no other field has (i is the
// field's index), so a field copied from the wrong one shows.
func distinct(t *testing.T, p *wire.SessionParams, set func(name string) bool) {
	t.Helper()
	v := reflect.ValueOf(p).Elem()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		if !set(name) {
			continue
		}
		switch f.Kind() {
		case reflect.Int:
			f.SetInt(int64(1000 + i))
		case reflect.Float64:
			f.SetFloat(float64(i) + 0.25)
		case reflect.String:
			f.SetString("value of " + name)
		case reflect.Bool:
			f.SetBool(true)
		default:
			t.Fatalf("wire field %s of kind %v: teach distinct its values", name, f.Kind())
		}
	}
}

// TestFromSessionCopiesEveryField: every wire field with a counterpart,
// set to a value of its own, arrives in that counterpart, and the
// wire-only fields change nothing.
func TestFromSessionCopiesEveryField(t *testing.T) {
	pairs := counterparts(t)
	tests := []struct {
		name string
		set  func(field string) bool
		want func(ov reflect.Value, optimName string, w reflect.Value) reflect.Value
	}{
		{"every field set", func(string) bool { return true },
			func(_ reflect.Value, optimName string, w reflect.Value) reflect.Value {
				return w.FieldByName(pairs[optimName])
			}},
		{"wire-only fields set", func(f string) bool { _, ok := wireOnly[f]; return ok },
			func(ov reflect.Value, optimName string, _ reflect.Value) reflect.Value {
				return reflect.Zero(ov.FieldByName(optimName).Type())
			}},
	}
	for _, tc := range tests {
		var s wire.SessionParams
		distinct(t, &s, tc.set)
		ov, w := reflect.ValueOf(FromSession(s)), reflect.ValueOf(s)
		for optimName := range pairs {
			got, want := ov.FieldByName(optimName), tc.want(ov, optimName, w)
			if !got.Equal(want) {
				t.Errorf("%s: FromSession gives %s = %v, want %v", tc.name, optimName, got, want)
			}
		}
	}
}

// TestMaxLocalEpochsAgree: the protocol and the algorithms bound
// LocalEpochs by the same number (each package keeps its own constant so
// that neither imports the other).
func TestMaxLocalEpochsAgree(t *testing.T) {
	if optim.MaxLocalEpochs != wire.MaxLocalEpochs {
		t.Errorf("optim.MaxLocalEpochs = %d, wire.MaxLocalEpochs = %d", optim.MaxLocalEpochs, wire.MaxLocalEpochs)
	}
}
