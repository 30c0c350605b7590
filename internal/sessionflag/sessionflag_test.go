package sessionflag

import (
	"encoding/json"
	"flag"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"browserfl/shared/session"
)

// newFlagSet returns a flag set that reports errors and writes nothing.
func newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// TestEachFlagSetsItsField: every session flag, registered under its own
// name, sets its field of Params and no other, and the field is the one
// the declaration names by its JSON name.
func TestEachFlagSetsItsField(t *testing.T) {
	tests := []struct {
		flag, value string
		want        session.Params
	}{
		{"name", "class 4b", session.Params{Name: "class 4b"}},
		{"algorithm", "shared", session.Params{Algorithm: "shared"}},
		{"model", "mlp", session.Params{Model: "mlp"}},
		{"features", "120", session.Params{Features: 120}},
		{"classes", "5", session.Params{Classes: 5}},
		{"transform", "scatter", session.Params{Transform: "scatter"}},
		{"M", "40", session.Params{M: 40}},
		{"m", "8", session.Params{Cohort: 8}},
		{"T", "90", session.Params{Rounds: 90}},
		{"b", "16", session.Params{Batch: 16}},
		{"max-releases", "-1", session.Params{MaxReleases: -1}},
		{"rho", "1.5", session.Params{Rho: 1.5}},
		{"epsilon", "7.92", session.Params{Epsilon: 7.92}},
		{"delta", "1e-6", session.Params{Delta: 1e-6}},
		{"clip", "2.5", session.Params{Clip: 2.5}},
		{"G", "3", session.Params{G: 3}},
		{"L", "4", session.Params{L: 4}},
		{"D", "0.1", session.Params{Diameter: 0.1}},
		{"eta", "0.02", session.Params{Eta: 0.02}},
		{"compressor", "randk:0.1+ef", session.Params{Compressor: "randk:0.1+ef"}},
		{"signal-bound", "0.25", session.Params{SignalBound: 0.25}},
		{"threshold", "7", session.Params{Threshold: 7}},
		{"colluders", "2", session.Params{Colluders: 2}},
		{"local-size", "600", session.Params{LocalSize: 600}},
		{"local-steps", "4", session.Params{LocalSteps: 4}},
		{"local-epochs", "3", session.Params{LocalEpochs: 3}},
	}
	var covered []string
	for _, tc := range tests {
		covered = append(covered, tc.flag)
		var p session.Params
		fs := newFlagSet()
		Register(fs, &p, Names()...)
		if err := fs.Parse([]string{"-" + tc.flag, tc.value}); err != nil {
			t.Errorf("-%s %s: %v", tc.flag, tc.value, err)
			continue
		}
		if p != tc.want {
			t.Errorf("-%s %s: got %+v, want %+v", tc.flag, tc.value, p, tc.want)
		}
		// The declaration's JSON name is the field's: the one key of
		// the session's JSON the flag changed.
		i := slices.IndexFunc(decls, func(d decl) bool { return d.name == tc.flag })
		if changed := changedKeys(t, session.Params{}, p); !slices.Equal(changed, []string{decls[i].key}) {
			t.Errorf("-%s: the session's JSON changed at %q, the declaration names %q", tc.flag, changed, decls[i].key)
		}
	}
	slices.Sort(covered)
	names := Names()
	slices.Sort(names)
	if !slices.Equal(covered, names) {
		t.Errorf("the table covers %q, the session flags are %q", covered, names)
	}
}

// changedKeys returns the JSON keys whose values differ between a and b.
func changedKeys(t *testing.T, a, b session.Params) []string {
	t.Helper()
	ma, mb := jsonMap(t, a), jsonMap(t, b)
	var out []string
	for k := range maps.Keys(mb) {
		if string(ma[k]) != string(mb[k]) {
			out = append(out, k)
		}
	}
	for k := range maps.Keys(ma) {
		if _, ok := mb[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func jsonMap(t *testing.T, p session.Params) map[string]json.RawMessage {
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

// TestDefaults: a flag's default is its field's value at registration;
// parsing nothing leaves the session as it was, and -h shows it.
func TestDefaults(t *testing.T) {
	p := session.Params{Algorithm: "nc", Model: "logreg", M: 30, Cohort: 10, Rounds: 200, Batch: 32, Clip: 1, Eta: 0.02, Epsilon: 7.92, Delta: 1e-5, MaxReleases: -1}
	want := p
	fs := newFlagSet()
	Register(fs, &p, Names()...)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if p != want {
		t.Errorf("parsing nothing: got %+v, want %+v", p, want)
	}
	for name, def := range map[string]string{"algorithm": "nc", "M": "30", "m": "10", "T": "200", "clip": "1", "eta": "0.02",
		"epsilon": "7.92", "delta": "1e-05", "max-releases": "-1", "rho": "0", "compressor": ""} {
		if f := fs.Lookup(name); f == nil || f.DefValue != def {
			t.Errorf("-%s: default %v, want %q", name, f, def)
		}
	}
}

// TestAsAndNote: a command registers a flag under its own name, which
// then sets the field (and the session name is not defined), with its
// note after the usage; and registers only the flags it names.
func TestAsAndNote(t *testing.T) {
	var p session.Params
	fs := newFlagSet()
	RegisterFlags(fs, &p, Flag{Name: "algorithm", As: "alg"}, Flag{Name: "local-steps", As: "K", Note: "the audit's K"})
	Register(fs, &p, "clip")
	if err := fs.Parse([]string{"-alg", "local", "-K", "4", "-clip", "2"}); err != nil {
		t.Fatal(err)
	}
	if want := (session.Params{Algorithm: "local", LocalSteps: 4, Clip: 2}); p != want {
		t.Errorf("got %+v, want %+v", p, want)
	}
	if u := fs.Lookup("K").Usage; !strings.HasPrefix(u, "local: hidden local steps") || !strings.HasSuffix(u, "; the audit's K") {
		t.Errorf("-K usage %q: want the declaration's, then the note", u)
	}
	var n int
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n != 3 {
		t.Errorf("%d flags defined, want the 3 registered", n)
	}
	for _, name := range []string{"algorithm", "local-steps", "eta"} {
		if fs.Lookup(name) != nil {
			t.Errorf("-%s is defined, want only the names registered", name)
		}
	}
}

// TestBadValues: an unknown flag (a session flag not registered, or one
// under a name the command did not give it) or an ill-typed value is an
// error.
func TestBadValues(t *testing.T) {
	for _, args := range [][]string{
		{"-M", "many"}, {"-m", "1.5"}, {"-clip", "abc"}, {"-eta", ""}, {"-T", "9999999999999999999999"},
		{"-nosuch", "1"}, {"-local", "600"}, {"-alg", "nc"},
	} {
		var p session.Params
		fs := newFlagSet()
		Register(fs, &p, Names()...)
		if err := fs.Parse(args); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// TestUnknownNamePanics: registering a name that is not a session flag
// is a programming error.
func TestUnknownNamePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Register of an unknown name did not panic")
		}
	}()
	Register(newFlagSet(), &session.Params{}, "clip", "nosuch")
}

// TestDeclarations: flag names and JSON names are unique, and each has
// a usage (TestEachFlagSetsItsField checks each JSON name is its field's).
func TestDeclarations(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range decls {
		if seen["flag "+d.name] || seen["key "+d.key] {
			t.Errorf("-%s (%s): declared twice", d.name, d.key)
		}
		seen["flag "+d.name], seen["key "+d.key] = true, true
		if d.usage == "" {
			t.Errorf("-%s: no usage", d.name)
		}
	}
}
