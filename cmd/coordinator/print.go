package main

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"browserfl/coordinator/sessions"
	"browserfl/coordinator/site"
	"browserfl/shared/wire"
)

// codeAlphabet has 31 characters without look-alikes (no 0/O, no 1/I/L):
// 4.95 bits per character, upper case, easy on a phone.
const codeAlphabet = sessions.JoinCodeAlphabet

// randomCode returns an n-character join code (4.95n bits) from
// codeAlphabet, drawn from crypto/rand.
func randomCode(n int) (string, error) { return sessions.RandomJoinCode(n) }

// printJoin prints the join URLs (every LAN address), a QR code of the
// first, the join code and the dashboard URL.
func printJoin(w io.Writer, sess wire.SessionParams, sizing string, join site.JoinInfo, code, teacher string) {
	fmt.Fprintf(w, "\nbrowserfl coordinator: session %q (%s, %s, d = %d, %s)\n",
		sess.Name, sess.Algorithm, sess.Model, sess.Dim, sizing)
	for i, u := range join.URLs {
		label := "join:     "
		if i > 0 {
			label = "or:       "
		}
		fmt.Fprintf(w, "  %s %s\n", label, u)
	}
	fmt.Fprintf(w, "  join code: %s\n", code)
	if len(join.URLs) > 0 {
		base := strings.SplitN(join.URLs[0], "/?", 2)[0]
		q := url.QueryEscape(code)
		fmt.Fprintf(w, "  dashboard: %s/dashboard?code=%s (read-only)\n", base, q)
		if teacher != "" {
			fmt.Fprintf(w, "  teacher:   %s/dashboard?code=%s&teacher=%s (keep it to yourself: it starts, pauses and ends sessions)\n", base, q, url.QueryEscape(teacher))
		}
	}
	if join.LoopbackOnly {
		fmt.Fprintf(w, "  note:      %s\n", join.LANHint())
	} else if len(join.URLs) > 0 {
		if q, err := site.TerminalQR(join.URLs[0]); err == nil {
			fmt.Fprintf(w, "\n%s", q)
		}
	}
	fmt.Fprintln(w)
}
