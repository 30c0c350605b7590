// Package task is what a session learns, in one documented, versioned
// format (browserfl.task/v1, JSON): the features a row has (numbers with
// public bounds, categories with their words, text turned into hashed
// character and word n-grams), the label and its words, the model and the
// privacy defaults. The device, the simulator, the planner and the
// coordinator read a task through this package only; docs/tasks.md is the
// format's reference.
//
// # Invariants
//
//   - Parse accepts a definition only if Validate does: every field known,
//     every limit below held, no trailing data. Every error wraps
//     ErrInvalid and names the field (errors.Is).
//   - Encode maps a row to exactly Dim() features, each in [0, 1]; a text
//     feature's block has Euclidean norm 1 (or is all zero for text
//     without letters), so no row, however long or odd, has a feature
//     vector of norm above sqrt(numbers + categories + texts). Nothing in
//     an encoding depends on other rows: the scaling uses the public
//     bounds in the definition, never statistics of private data, so
//     encoding costs no privacy.
//   - A row that does not fit (a wrong number of columns, a number that is
//     not finite or outside its bounds, an unknown category, text over
//     its stated length) is refused with a *RowError that says in plain
//     words what to change; nothing of it is encoded.
//   - The encoding is the same natively and in WebAssembly: FNV-1a
//     hashing of UTF-8 bytes, integer arithmetic, float32 results of the
//     same float64 operations.
package task

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Format is the version tag every definition carries.
const Format = "browserfl.task/v1"

// Limits of a definition (a teacher's file or dashboard form is network
// input).
const (
	MaxDefinitionBytes = 12 << 10 // a session carries it in a control message (wire.MaxControlBytes)
	MaxFeatures        = 64
	MaxValues          = 64   // words of a category or of the label
	MaxWordLength      = 40   // characters in one name or value
	MaxTitleLength     = 80   // characters
	MaxAboutLength     = 400  // characters
	MaxTextLength      = 1000 // a text feature's max_length at most
	MinBuckets         = 16
	MaxBuckets         = 1 << 14
	MaxGram            = 5
	MaxDim             = 1 << 16 // features after encoding
)

// ErrInvalid is wrapped by every error about a definition.
var ErrInvalid = errors.New("task: invalid definition")

// Kind is the type of one feature.
type Kind string

// The feature kinds.
const (
	Number   Kind = "number"
	Category Kind = "category"
	Text     Kind = "text"
)

// Definition is a task: what one row holds and what the model guesses.
type Definition struct {
	Format string `json:"format"`
	// Name is a short identifier: lower-case letters, digits and dashes.
	Name string `json:"name"`
	// Title names the task in words for the projector ("Guess a
	// diamond's price").
	Title string `json:"title"`
	// About says in one or two sentences what the class teaches the
	// model; students read it before they agree to take part.
	About    string    `json:"about"`
	Features []Feature `json:"features"`
	Label    Label     `json:"label"`
	// Model is "logreg" or "mlp" (shared/model).
	Model   string  `json:"model"`
	Privacy Privacy `json:"privacy"`
}

// Feature is one column of a row.
type Feature struct {
	Name string `json:"name"`
	// Ask is the question on the students' form ("How heavy is it, in
	// carats?").
	Ask  string `json:"ask"`
	Kind Kind   `json:"kind"`
	// Min and Max bound a number (public bounds, required): values
	// outside are refused, values inside are scaled to [0, 1].
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	// Values are a category's words, in order.
	Values []string `json:"values,omitempty"`
	// MaxLength bounds a text, in characters.
	MaxLength int `json:"max_length,omitempty"`
	// CharGrams lists the character n-gram lengths a text is cut into
	// (each word padded with ^ and $), WordGrams whether whole words
	// count too; Buckets (a power of two) is how many features they are
	// hashed into.
	CharGrams []int `json:"char_grams,omitempty"`
	WordGrams bool  `json:"word_grams,omitempty"`
	Buckets   int   `json:"buckets,omitempty"`
}

// Label is what the model guesses.
type Label struct {
	Name   string   `json:"name"`
	Ask    string   `json:"ask"`
	Values []string `json:"values"`
}

// Privacy holds the task's defaults; zero means the product's default.
type Privacy struct {
	Epsilon float64 `json:"epsilon,omitempty"`
	Delta   float64 `json:"delta,omitempty"`
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// Parse reads and validates a definition.
func Parse(data []byte) (*Definition, error) {
	if len(data) > MaxDefinitionBytes {
		return nil, fmt.Errorf("%w: over %d bytes, the most a task may have", ErrInvalid, MaxDefinitionBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var d Definition
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the definition", ErrInvalid)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &d, nil
}

// Marshal returns the definition's canonical JSON.
func (d *Definition) Marshal() ([]byte, error) { return json.MarshalIndent(d, "", "  ") }

func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}

// words checks a text shown to people: valid UTF-8, no control
// characters, 1..max characters.
func words(field, s string, max int) error {
	n := utf8.RuneCountInString(s)
	switch {
	case !utf8.ValidString(s):
		return invalid(field, "not valid UTF-8")
	case strings.TrimSpace(s) == "":
		return invalid(field, "empty")
	case n > max:
		return invalid(field, "%d characters, at most %d", n, max)
	case strings.IndexFunc(s, func(r rune) bool {
		// C0 and C1 controls, and the bidirectional controls that could
		// reorder what a student reads before consent.
		return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\ufeff'
	}) >= 0:
		return invalid(field, "contains a control character")
	}
	return nil
}

func valueList(field string, vs []string) error {
	if len(vs) < 2 || len(vs) > MaxValues {
		return invalid(field, "%d values, want 2 to %d", len(vs), MaxValues)
	}
	seen := map[string]bool{}
	for i, v := range vs {
		if err := words(fmt.Sprintf("%s[%d]", field, i), v, MaxWordLength); err != nil {
			return err
		}
		k := normal(v)
		if seen[k] {
			return invalid(field, "%q is listed twice", v)
		}
		seen[k] = true
	}
	return nil
}

// Validate checks every field against the format and its limits.
func (d *Definition) Validate() error {
	if d.Format != Format {
		return invalid("format", "%q, want %q", d.Format, Format)
	}
	if !nameRE.MatchString(d.Name) {
		return invalid("name", "%q: use 1 to 40 lower-case letters, digits and dashes", d.Name)
	}
	if err := words("title", d.Title, MaxTitleLength); err != nil {
		return err
	}
	if err := words("about", d.About, MaxAboutLength); err != nil {
		return err
	}
	if len(d.Features) == 0 || len(d.Features) > MaxFeatures {
		return invalid("features", "%d features, want 1 to %d", len(d.Features), MaxFeatures)
	}
	names := map[string]bool{normal(d.Label.Name): true}
	for i := range d.Features {
		if err := d.Features[i].validate(fmt.Sprintf("features[%d]", i)); err != nil {
			return err
		}
		k := normal(d.Features[i].Name)
		if names[k] {
			return invalid(fmt.Sprintf("features[%d].name", i), "%q is used twice (or is the label's name)", d.Features[i].Name)
		}
		names[k] = true
	}
	if err := words("label.name", d.Label.Name, MaxWordLength); err != nil {
		return err
	}
	if err := words("label.ask", d.Label.Ask, MaxTitleLength); err != nil {
		return err
	}
	if err := valueList("label.values", d.Label.Values); err != nil {
		return err
	}
	for _, v := range d.Label.Values {
		if strings.Contains(v, ",") {
			// The protocol lists the class names comma-separated
			// (wire.SessionParams.Labels).
			return invalid("label.values", "%q: a label may not contain a comma", v)
		}
	}
	switch d.Model {
	case "logreg", "mlp":
	default:
		return invalid("model", "%q, want \"logreg\" or \"mlp\"", d.Model)
	}
	if e := d.Privacy.Epsilon; e != 0 && !(e > 0 && e <= 64) {
		return invalid("privacy.epsilon", "%g, want a number in (0, 64]", e)
	}
	if dl := d.Privacy.Delta; dl != 0 && !(dl > 0 && dl <= 1e-3) {
		return invalid("privacy.delta", "%g, want a number in (0, 0.001]", dl)
	}
	if n := d.Dim(); n > MaxDim {
		return invalid("features", "%d features after encoding, at most %d", n, MaxDim)
	}
	return nil
}

func (f *Feature) validate(field string) error {
	if err := words(field+".name", f.Name, MaxWordLength); err != nil {
		return err
	}
	if err := words(field+".ask", f.Ask, MaxTitleLength); err != nil {
		return err
	}
	numberOnly := f.Min != nil || f.Max != nil
	categoryOnly := f.Values != nil
	textOnly := f.MaxLength != 0 || f.CharGrams != nil || f.WordGrams || f.Buckets != 0
	switch f.Kind {
	case Number:
		if categoryOnly || textOnly {
			return invalid(field, "a number takes only min and max")
		}
		if f.Min == nil || f.Max == nil {
			return invalid(field, "a number needs public bounds min and max")
		}
		lo, hi := *f.Min, *f.Max
		if math.IsNaN(lo) || math.IsInf(lo, 0) || math.IsNaN(hi) || math.IsInf(hi, 0) || !(lo < hi) || hi-lo > math.MaxFloat64/2 {
			return invalid(field, "bounds [%g, %g]: want finite min < max", lo, hi)
		}
	case Category:
		if numberOnly || textOnly {
			return invalid(field, "a category takes only values")
		}
		return valueList(field+".values", f.Values)
	case Text:
		if numberOnly || categoryOnly {
			return invalid(field, "a text takes only max_length, char_grams, word_grams and buckets")
		}
		if f.MaxLength < 1 || f.MaxLength > MaxTextLength {
			return invalid(field+".max_length", "%d, want 1 to %d", f.MaxLength, MaxTextLength)
		}
		if len(f.CharGrams) == 0 && !f.WordGrams {
			return invalid(field, "a text needs char_grams or word_grams")
		}
		seen := map[int]bool{}
		for _, g := range f.CharGrams {
			if g < 1 || g > MaxGram || seen[g] {
				return invalid(field+".char_grams", "%v: want distinct lengths 1 to %d", f.CharGrams, MaxGram)
			}
			seen[g] = true
		}
		if f.Buckets < MinBuckets || f.Buckets > MaxBuckets || f.Buckets&(f.Buckets-1) != 0 {
			return invalid(field+".buckets", "%d, want a power of two from %d to %d", f.Buckets, MinBuckets, MaxBuckets)
		}
	default:
		return invalid(field+".kind", "%q, want %q, %q or %q", f.Kind, Number, Category, Text)
	}
	return nil
}

// width is the number of encoded features of f.
func (f *Feature) width() int {
	switch f.Kind {
	case Number:
		return 1
	case Category:
		return len(f.Values)
	case Text:
		return f.Buckets
	}
	return 0
}

// Dim is the number of features a row encodes to.
func (d *Definition) Dim() int {
	n := 0
	for i := range d.Features {
		n += d.Features[i].width()
	}
	return n
}

// Classes is the number of label values.
func (d *Definition) Classes() int { return len(d.Label.Values) }

// normal is the form in which categories and labels are compared: spaces
// trimmed, case folded.
func normal(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
