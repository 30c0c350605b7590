package main

import (
	"strings"
	"testing"

	"browserfl/coordinator/site"
	"browserfl/shared/wire"
)

// TestPrintJoin: every join URL, the code and the dashboard are printed;
// a LAN listener gets a terminal QR code, a loopback one the hint
// instead.
func TestPrintJoin(t *testing.T) {
	sess := wire.SessionParams{Name: "demo", Algorithm: "nc", Model: "logreg", Dim: 7850, M: 30, Cohort: 10, Rounds: 200}
	lan := site.JoinInfo{URLs: []string{"http://192.168.1.23:8080/?code=K7", "http://[2001:db8::42]:8080/?code=K7"}}
	var b strings.Builder
	printJoin(&b, sess, "M = 30, m = 10, T = 200", lan, "K7", "SECRET")
	out := b.String()
	for _, want := range []string{"join:      http://192.168.1.23:8080/?code=K7", "or:        http://[2001:db8::42]:8080/?code=K7",
		"join code: K7", "dashboard: http://192.168.1.23:8080/dashboard?code=K7", "teacher:   http://192.168.1.23:8080/dashboard?code=K7&teacher=SECRET", "█"} {
		if !strings.Contains(out, want) {
			t.Errorf("LAN output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "note:") {
		t.Errorf("LAN output has the loopback note:\n%s", out)
	}
	b.Reset()
	printJoin(&b, sess, "M = 30, m = 10, T = 200", site.JoinInfo{URLs: []string{"http://localhost:8080/?code=K7"}, LoopbackOnly: true}, "K7", "SECRET")
	out = b.String()
	if !strings.Contains(out, `RUNFLAGS="-listen :8080"`) || !strings.Contains(out, "join:      http://localhost:8080/?code=K7") || strings.Contains(out, "█") {
		t.Errorf("loopback output:\n%s", out)
	}
	// The note names the port the coordinator listens on.
	b.Reset()
	printJoin(&b, sess, "M = 30, m = 10, T = 200", site.JoinInfo{URLs: []string{"http://127.0.0.1:19100/?code=K7"}, LoopbackOnly: true}, "K7", "SECRET")
	if out = b.String(); !strings.Contains(out, `RUNFLAGS="-listen :19100"`) {
		t.Errorf("loopback output on port 19100:\n%s", out)
	}
}
