package task

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

const example = `{
  "format": "browserfl.task/v1",
  "name": "pets",
  "title": "Guess a pet",
  "about": "The class teaches a model to guess a pet from how it is described.",
  "features": [
    {"name": "weight", "ask": "How heavy, in kg?", "kind": "number", "min": 0, "max": 80},
    {"name": "legs", "ask": "How many legs?", "kind": "category", "values": ["0", "2", "4"]},
    {"name": "sound", "ask": "What sound does it make?", "kind": "text", "max_length": 30, "char_grams": [2, 3], "word_grams": true, "buckets": 64}
  ],
  "label": {"name": "pet", "ask": "Which pet is it?", "values": ["cat", "dog", "fish", "bird"]},
  "model": "logreg",
  "privacy": {"epsilon": 4}
}`

func TestParseExample(t *testing.T) {
	d, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if d.Dim() != 1+3+64 || d.Classes() != 4 {
		t.Fatalf("Dim %d, Classes %d; want 68, 4", d.Dim(), d.Classes())
	}
	// The canonical form parses back to the same definition.
	b, err := d.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	d2, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := d2.Marshal()
	if string(b) != string(b2) {
		t.Errorf("Marshal is not stable:\n%s\n%s", b, b2)
	}
}

// TestParseRefuses: each malformed definition is refused with ErrInvalid
// and an error naming the field.
func TestParseRefuses(t *testing.T) {
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(example), &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	feat := func(m map[string]any, i int) map[string]any { return m["features"].([]any)[i].(map[string]any) }
	for _, tc := range []struct{ name, json, field string }{
		{"unknown field", edit(func(m map[string]any) { m["colour"] = 1 }), "unknown field"},
		{"trailing data", example + " {}", "after the definition"},
		{"format", edit(func(m map[string]any) { m["format"] = "browserfl.task/v2" }), "format"},
		{"name", edit(func(m map[string]any) { m["name"] = "Pets!" }), "name"},
		{"empty title", edit(func(m map[string]any) { m["title"] = " " }), "title"},
		{"control character", edit(func(m map[string]any) { m["about"] = "a\u0007b" }), "about"},
		{"C1 control", edit(func(m map[string]any) { m["about"] = "a\u0085b" }), "about"},
		{"bidi override", edit(func(m map[string]any) { m["title"] = "a\u202eb" }), "title"},
		{"byte order mark in a name", edit(func(m map[string]any) { m["features"].([]any)[0].(map[string]any)["name"] = "\ufeffweight" }), "features[0].name"},
		{"no features", edit(func(m map[string]any) { m["features"] = []any{} }), "features"},
		{"number without max", edit(func(m map[string]any) { delete(feat(m, 0), "max") }), "features[0]"},
		{"min not below max", edit(func(m map[string]any) { feat(m, 0)["min"] = 80 }), "features[0]"},
		{"number with values", edit(func(m map[string]any) { feat(m, 0)["values"] = []any{"a", "b"} }), "features[0]"},
		{"one value", edit(func(m map[string]any) { feat(m, 1)["values"] = []any{"4"} }), "features[1].values"},
		{"repeated value", edit(func(m map[string]any) { feat(m, 1)["values"] = []any{"4", " 4"} }), "features[1].values"},
		{"buckets not a power of two", edit(func(m map[string]any) { feat(m, 2)["buckets"] = 100 }), "features[2].buckets"},
		{"too many buckets", edit(func(m map[string]any) { feat(m, 2)["buckets"] = 1 << 15 }), "features[2].buckets"},
		{"gram 6", edit(func(m map[string]any) { feat(m, 2)["char_grams"] = []any{6} }), "features[2].char_grams"},
		{"no grams", edit(func(m map[string]any) { delete(feat(m, 2), "char_grams"); delete(feat(m, 2), "word_grams") }), "features[2]"},
		{"text too long", edit(func(m map[string]any) { feat(m, 2)["max_length"] = 5000 }), "features[2].max_length"},
		{"kind", edit(func(m map[string]any) { feat(m, 0)["kind"] = "image" }), "features[0].kind"},
		{"name twice", edit(func(m map[string]any) { feat(m, 1)["name"] = "Weight" }), "features[1].name"},
		{"feature named like the label", edit(func(m map[string]any) { feat(m, 1)["name"] = "pet" }), "features[1].name"},
		{"comma in a label", edit(func(m map[string]any) { m["label"].(map[string]any)["values"] = []any{"a,b", "c"} }), "label.values"},
		{"model", edit(func(m map[string]any) { m["model"] = "cnn" }), "model"},
		{"epsilon", edit(func(m map[string]any) { m["privacy"] = map[string]any{"epsilon": -1} }), "privacy.epsilon"},
		{"delta", edit(func(m map[string]any) { m["privacy"] = map[string]any{"delta": 0.5} }), "privacy.delta"},
		{"too large", `{"format":"` + strings.Repeat("x", MaxDefinitionBytes) + `"}`, "bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.json))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("err = %v, want it to name %q", err, tc.field)
			}
		})
	}
}

func TestEncode(t *testing.T) {
	d, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	x, err := d.Encode([]string{" 20 ", "4", "Woof woof!"})
	if err != nil {
		t.Fatal(err)
	}
	if len(x) != d.Dim() {
		t.Fatalf("len %d, want %d", len(x), d.Dim())
	}
	if x[0] != 0.25 || x[1] != 0 || x[2] != 0 || x[3] != 1 {
		t.Errorf("number and category: %v, want [0.25 0 0 1]", x[:4])
	}
	var sq float64
	for _, v := range x[4:] {
		if v < 0 || v > 1 {
			t.Fatalf("text feature %v outside [0, 1]", v)
		}
		sq += float64(v) * float64(v)
	}
	if math.Abs(sq-1) > 1e-6 {
		t.Errorf("text block norm^2 = %v, want 1", sq)
	}
	// Case and punctuation do not change the text's features.
	y, _ := d.Encode([]string{"20", "4", "WOOF, woof"})
	for i := range x {
		if x[i] != y[i] {
			t.Fatalf("feature %d: %v != %v", i, x[i], y[i])
		}
	}
	// Text without letters encodes to zeros.
	z, err := d.Encode([]string{"0", "0", "?!"})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range z[4:] {
		if v != 0 {
			t.Fatal("text without letters has a non-zero feature")
		}
	}
}

// TestEncodeRefuses: a row that does not fit is refused with a RowError
// naming the column.
func TestEncodeRefuses(t *testing.T) {
	d, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		row    []string
		column string
	}{
		{[]string{"20", "4"}, ""},
		{[]string{"20", "4", "meow", "x"}, ""},
		{[]string{"heavy", "4", "meow"}, "weight"},
		{[]string{"NaN", "4", "meow"}, "weight"},
		{[]string{"Inf", "4", "meow"}, "weight"},
		{[]string{"80.5", "4", "meow"}, "weight"},
		{[]string{"-1", "4", "meow"}, "weight"},
		{[]string{"3", "3", "meow"}, "legs"},
		{[]string{"3", "4", strings.Repeat("m", 31)}, "sound"},
		{[]string{"3", "4", "\xff\xfe"}, "sound"},
	} {
		x, err := d.Encode(tc.row)
		var re *RowError
		if !errors.As(err, &re) || re.Column != tc.column || x != nil {
			t.Errorf("Encode(%q) = %v, %v; want a RowError for column %q", tc.row, x, err, tc.column)
		}
	}
	if _, err := d.LabelIndex("hamster"); err == nil {
		t.Error("an unknown label was accepted")
	}
	if i, err := d.LabelIndex(" DOG "); err != nil || i != 1 {
		t.Errorf("LabelIndex(DOG) = %d, %v; want 1", i, err)
	}
}

// TestHashPinned pins the text hashing (FNV-1a 32 of the kind byte and the
// UTF-8 gram; the values were computed independently, in Python), so the page (WebAssembly) and the
// native device, which run this same code, can only agree: a change of
// hash, padding or lower-casing fails here.
func TestHashPinned(t *testing.T) {
	for _, tc := range []struct {
		kind byte
		gram string
		want uint32
	}{
		{'3', "^ab", 0xd2bffb37},
		{'w', "über", 0x0bf0406a},
	} {
		if got := hash(tc.kind, tc.gram); got != tc.want {
			t.Errorf("hash(%c, %q) = %#x, want %#x", tc.kind, tc.gram, got, tc.want)
		}
	}
	if w := Words("Über-Straße, 2x!"); strings.Join(w, "|") != "über|straße|2x" {
		t.Errorf("Words = %q", w)
	}
}

func TestBuiltinsValid(t *testing.T) {
	for _, n := range BuiltinNames() {
		b, err := LookupBuiltin(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Def.Validate(); err != nil {
			t.Errorf("%s: %v", n, err)
		}
		if !strings.Contains(b.Def.Describe(), b.Def.Label.Name) {
			t.Errorf("%s: Describe does not name the label", n)
		}
	}
	if _, err := LookupBuiltin("images"); err == nil {
		t.Error("an unknown task was found")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(example))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if d.Dim() < 1 || d.Dim() > MaxDim {
			t.Fatalf("Dim %d", d.Dim())
		}
	})
}

func FuzzEncode(f *testing.F) {
	d, err := Parse([]byte(example))
	if err != nil {
		f.Fatal(err)
	}
	f.Add("20", "4", "woof")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		x, err := d.Encode([]string{a, b, c})
		if err != nil {
			var re *RowError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is not a RowError", err)
			}
			return
		}
		var sq float64
		for _, v := range x {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("feature %v outside [0, 1]", v)
			}
			sq += float64(v) * float64(v)
		}
		if sq > 3+1e-5 {
			t.Fatalf("norm^2 %v above the bound 3", sq)
		}
	})
}
