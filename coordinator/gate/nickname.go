package gate

import (
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"browserfl/shared/wire"
)

// Nicknames are shown to the whole class on the projector, so a name that
// looks like someone else's ("Тeacher" with a Cyrillic Т beside
// "Teacher") would let one student pass for another. The coordinator
// keeps each nickname in Unicode NFKC form (golang.org/x/text/unicode/norm:
// full-width and other compatibility forms become the plain letters they
// show) and refuses a hello whose nickname has the same skeleton as the
// nickname of a device present in the session (connected and not left),
// with wire.CodeNickname: the page says "That name is too close to
// someone else's. Try another."
//
// The skeleton is our own small version of the confusables skeleton of
// Unicode TS #39: golang.org/x/text has no confusables table, and the
// full one (thousands of entries) is far more than a 24-character
// classroom nickname needs. It is, in order:
//
//  1. NFKD, dropping combining marks (é and e, ñ and n look alike);
//  2. the homoglyph table below: the Cyrillic and Greek letters that look
//     like a Latin one, capital and small apart (capital Greek Η is H,
//     small η is n);
//  3. full case folding (golang.org/x/text/cases: ß is ss);
//  4. the Latin and digit look-alikes of lower case: l, 1 and | as i,
//     0 as o;
//  5. spaces, '-' and '_' dropped ("An na" is "Anna").
//
// It does not catch every look-alike ("rn" and "m", letters of other
// scripts); it catches the common ones a phone keyboard offers.
var homoglyphs = map[rune]rune{
	// Cyrillic capitals and smalls.
	'А': 'A', 'а': 'a', 'В': 'B', 'в': 'b', 'Е': 'E', 'е': 'e', 'Ѕ': 'S', 'ѕ': 's',
	'І': 'I', 'і': 'i', 'Ј': 'J', 'ј': 'j', 'К': 'K', 'к': 'k', 'М': 'M', 'м': 'm',
	'Н': 'H', 'н': 'h', 'О': 'O', 'о': 'o', 'Р': 'P', 'р': 'p', 'С': 'C', 'с': 'c',
	'Т': 'T', 'т': 't', 'У': 'Y', 'у': 'y', 'Х': 'X', 'х': 'x', 'Һ': 'H', 'һ': 'h',
	'Ԁ': 'D', 'ԁ': 'd', 'Ԛ': 'Q', 'ԛ': 'q', 'Ԝ': 'W', 'ԝ': 'w', 'Ү': 'Y', 'ү': 'y',
	'Ӏ': 'I', 'ӏ': 'l', 'Ь': 'b', 'ь': 'b', 'Ꙇ': 'I',
	// Greek capitals and smalls.
	'Α': 'A', 'α': 'a', 'Β': 'B', 'β': 'b', 'Ε': 'E', 'ε': 'e', 'Ζ': 'Z', 'Η': 'H',
	'η': 'n', 'Ι': 'I', 'ι': 'i', 'Κ': 'K', 'κ': 'k', 'Μ': 'M', 'μ': 'u', 'Ν': 'N',
	'ν': 'v', 'Ο': 'O', 'ο': 'o', 'Ρ': 'P', 'ρ': 'p', 'Τ': 'T', 'τ': 't', 'Υ': 'Y',
	'υ': 'u', 'Χ': 'X', 'χ': 'x', 'ω': 'w', 'ϲ': 'c', 'Ϲ': 'C', 'γ': 'y',
}

// lowerLookalikes maps lower-case letters and digits that look alike
// (step 4 of the skeleton).
var lowerLookalikes = map[rune]rune{'l': 'i', '1': 'i', '0': 'o'}

// NormalizeNickname returns the nickname the coordinator keeps for s (a
// nickname wire.CheckNickname accepted): its NFKC form, which must
// itself be a valid nickname (NFKC can lengthen a name).
func NormalizeNickname(s string) (string, error) {
	n := norm.NFKC.String(s)
	if err := wire.CheckNickname(n); err != nil {
		return "", err
	}
	return n, nil
}

// NicknameSkeleton is the form two nicknames that look alike share (see
// the comment of homoglyphs).
func NicknameSkeleton(s string) string {
	var b strings.Builder
	for _, r := range norm.NFKD.String(s) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		if l, ok := homoglyphs[r]; ok {
			r = l
		}
		b.WriteRune(r)
	}
	folded := cases.Fold().String(b.String())
	b.Reset()
	for _, r := range folded {
		switch {
		case r == ' ' || r == '-' || r == '_':
			continue
		case lowerLookalikes[r] != 0:
			r = lowerLookalikes[r]
		}
		b.WriteRune(r)
	}
	return b.String()
}
