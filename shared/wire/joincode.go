package wire

import (
	"strings"
	"unicode"
)

// NormalizeJoinCode returns a join code as the coordinator compares it:
// letters in upper case, spaces and dashes dropped, so that "qphx v8wl"
// and "QPHX-V8WL" are the same code. Every side normalises before it
// compares or hashes a code (the page, the coordinator, the edges); a
// code chosen by an operator is compared in the same form, so it stays
// valid whatever case it was given in.
func NormalizeJoinCode(code string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '-' {
			return -1
		}
		return unicode.ToUpper(r)
	}, code)
}
