package task

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// RowError says why a row was refused, in words a student can act on.
type RowError struct {
	Column string // the feature or label name; empty for the whole row
	Reason string
}

func (e *RowError) Error() string {
	if e.Column == "" {
		return e.Reason
	}
	return e.Column + ": " + e.Reason
}

func rowErr(col, format string, args ...any) error {
	return &RowError{Column: col, Reason: fmt.Sprintf(format, args...)}
}

// Encode turns one row (its features' values as typed, in the order of
// Features) into Dim() features. A row that does not fit returns a
// *RowError and no features.
func (d *Definition) Encode(row []string) ([]float32, error) {
	if len(row) != len(d.Features) {
		return nil, rowErr("", "a row needs %d values (%s), this one has %d", len(d.Features), d.featureNames(), len(row))
	}
	out := make([]float32, 0, d.Dim())
	for i := range d.Features {
		var err error
		if out, err = d.Features[i].encode(out, row[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// LabelIndex returns the index of a label value (case and surrounding spaces
// do not matter).
func (d *Definition) LabelIndex(s string) (int, error) {
	k := normal(s)
	for i, v := range d.Label.Values {
		if normal(v) == k {
			return i, nil
		}
	}
	return 0, rowErr(d.Label.Name, "%q is not one of the choices: %s", clip(s), strings.Join(d.Label.Values, ", "))
}

func (d *Definition) featureNames() string {
	names := make([]string, len(d.Features))
	for i, f := range d.Features {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// clip shortens what a student typed for an error message.
func clip(s string) string {
	if utf8.RuneCountInString(s) <= 30 {
		return s
	}
	return string([]rune(s)[:30]) + "..."
}

func (f *Feature) encode(dst []float32, v string) ([]float32, error) {
	switch f.Kind {
	case Number:
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		lo, hi := *f.Min, *f.Max
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, rowErr(f.Name, "%q is not a number; type a number from %s to %s", clip(v), num(lo), num(hi))
		}
		if x < lo || x > hi {
			return nil, rowErr(f.Name, "%s is outside the range; type a number from %s to %s", num(x), num(lo), num(hi))
		}
		return append(dst, float32((x-lo)/(hi-lo))), nil
	case Category:
		k := normal(v)
		for i, w := range f.Values {
			if normal(w) == k {
				for j := range f.Values {
					dst = append(dst, float32(b2f(i == j)))
				}
				return dst, nil
			}
		}
		return nil, rowErr(f.Name, "%q is not one of the choices: %s", clip(v), strings.Join(f.Values, ", "))
	case Text:
		return f.encodeText(dst, v)
	}
	return nil, rowErr(f.Name, "unknown kind %q", f.Kind)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func num(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// encodeText hashes the text's n-grams into f.Buckets counts and scales
// the block to norm 1.
func (f *Feature) encodeText(dst []float32, v string) ([]float32, error) {
	if !utf8.ValidString(v) {
		return nil, rowErr(f.Name, "the text has characters that cannot be read")
	}
	if n := utf8.RuneCountInString(v); n > f.MaxLength {
		return nil, rowErr(f.Name, "%d characters is too long; at most %d", n, f.MaxLength)
	}
	counts := make([]float64, f.Buckets)
	mask := uint32(f.Buckets - 1)
	for _, w := range Words(v) {
		if f.WordGrams {
			counts[hash('w', w)&mask]++
		}
		padded := []rune("^" + w + "$")
		for _, g := range f.CharGrams {
			for i := 0; i+g <= len(padded); i++ {
				counts[hash(byte('0'+g), string(padded[i:i+g]))&mask]++
			}
		}
	}
	var sq float64
	for _, c := range counts {
		sq += c * c
	}
	norm := math.Sqrt(sq)
	for _, c := range counts {
		if norm == 0 {
			dst = append(dst, 0)
		} else {
			dst = append(dst, float32(c/norm))
		}
	}
	return dst, nil
}

// Words splits a text into its words: runs of letters and digits, lower
// case (the same on every platform: unicode tables of the Go release).
func Words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// hash is FNV-1a (32 bits) of a kind byte and the gram's UTF-8 bytes.
func hash(kind byte, gram string) uint32 {
	h := fnv.New32a()
	h.Write([]byte{kind})
	h.Write([]byte(gram))
	return h.Sum32()
}

// Describe says in words what a row holds and what the model learns,
// for the page before consent and the lobby.
func (d *Definition) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s Each row you add has: ", d.Title+".", d.About)
	for i, f := range d.Features {
		if i > 0 {
			b.WriteString("; ")
		}
		switch f.Kind {
		case Number:
			fmt.Fprintf(&b, "%s (a number from %s to %s)", f.Name, num(*f.Min), num(*f.Max))
		case Category:
			fmt.Fprintf(&b, "%s (one of %s)", f.Name, strings.Join(f.Values, ", "))
		case Text:
			fmt.Fprintf(&b, "%s (text, up to %d characters)", f.Name, f.MaxLength)
		}
	}
	fmt.Fprintf(&b, "; and the answer, %s (one of %s). Your rows stay on your device; only noisy changes to the model are sent.", d.Label.Name, strings.Join(d.Label.Values, ", "))
	return b.String()
}
