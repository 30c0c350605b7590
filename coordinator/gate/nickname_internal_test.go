package gate

import (
	"strings"
	"testing"
)

// TestNicknameSkeleton: names that look alike share a skeleton (Cyrillic
// and Greek letters for Latin ones, full-width forms, accents, I and l,
// case, spaces); names that differ do not.
func TestNicknameSkeleton(t *testing.T) {
	same := [][2]string{
		{"Teacher", "Тeacher"},   // Cyrillic capital Te
		{"Teacher", "ТЕАСНЕR"},   // Cyrillic capitals, R Latin
		{"Teacher", "teacher"},   // case
		{"Teacher", "Ｔｅａｃｈｅｒ"},   // full-width
		{"Anna", "Аnnа"},         // Cyrillic a
		{"paypal", "рауpаl"},     // Cyrillic r, a, u
		{"Max", "Μax"},           // Greek capital Mu
		{"Noah", "Νοah"},         // Greek capital Nu, small omicron
		{"Hope", "Ηope"},         // Greek capital Eta
		{"José", "Jose"},         // accent
		{"Zoë", "Zoe"},           // diaeresis
		{"Bill", "BiII"},         // l and capital I
		{"Leo", "1eo"},           // l and 1
		{"Otto", "0tto"},         // O and 0
		{"Anna Lee", "anna_lee"}, // space and _
		{"Strasse", "Straße"},    // full case folding
	}
	for _, p := range same {
		if a, b := NicknameSkeleton(p[0]), NicknameSkeleton(p[1]); a != b {
			t.Errorf("%q and %q look alike but have skeletons %q and %q", p[0], p[1], a, b)
		}
	}
	differ := [][2]string{{"Anna", "Ann"}, {"Ben", "Ken"}, {"Tom", "Tim"}, {"Mia", "Lia"}, {"Teacher", "Teachers"}, {"Max", "Mac"}}
	for _, p := range differ {
		if a, b := NicknameSkeleton(p[0]), NicknameSkeleton(p[1]); a == b {
			t.Errorf("%q and %q differ but share the skeleton %q", p[0], p[1], a)
		}
	}
}

// TestNormalizeNickname: the coordinator keeps the NFKC form, and a name
// NFKC makes invalid (too long) is refused.
func TestNormalizeNickname(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"Mia", "Mia", true},
		{"Ｍｉａ", "Mia", true},
		{"ﬁn", "fin", true},
		{"", "", true},
		{strings.Repeat("ﷺ", 2), "", false}, // one character, 18 after NFKC
	}
	for _, tc := range tests {
		got, err := NormalizeNickname(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("normalizeNickname(%q) = %q, %v; want %q (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
