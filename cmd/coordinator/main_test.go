package main

import (
	"bytes"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"browserfl/shared/optim/algo"
	"browserfl/shared/plan"
	"browserfl/shared/task"
)

// TestParsePrecedence: command line over environment over config file
// over defaults.
func TestParsePrecedence(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(cfg, []byte(`{"listen": ":9000", "join_code": "FILE", "deadline": "7s",
		"session": {"name": "from-file", "algorithm": "nc", "M": 40, "cohort": 8, "rounds": 9, "batch": 4, "clip": 2, "eta": 0.1, "rho_p": 3}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BFL_JOIN_CODE", "ENV")
	t.Setenv("BFL_M", "50")
	o, err := parse([]string{"-config", cfg, "-m", "12"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"listen from file", o.Listen, ":9000"},
		{"deadline from file", o.Deadline, "7s"},
		{"join code from env over file", o.JoinCode, "ENV"},
		{"M from env over file", o.Session.M, 50},
		{"m from command line over file", o.Session.Cohort, 12},
		{"name from file", o.Session.Name, "from-file"},
		{"rounds from file", o.Session.Rounds, 9},
		{"data dir default", o.DataDir, "data/coordinator"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestParseEnvironment: each flag has its own environment variable
// (-M and -m share capitals: -m's is BFL_COHORT, its config file name),
// BFL_CONFIG names the config file, and an error names the variable to
// fix.
func TestParseEnvironment(t *testing.T) {
	fs := flag.NewFlagSet("coordinator", flag.ContinueOnError)
	var o options
	var x lineFlags
	serverFlags(fs, &o, &x)
	clusterFlags(fs, &o, &x)
	sessionFlags(fs, &o.Session)
	seen := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if other, ok := seen[envName(f.Name)]; ok {
			t.Errorf("-%s and -%s share the variable %s", f.Name, other, envName(f.Name))
		}
		seen[envName(f.Name)] = f.Name
	})

	cfg := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(cfg, []byte(`{"session": {"algorithm": "nc", "M": 40, "cohort": 8, "rounds": 9}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BFL_CONFIG", cfg)
	t.Setenv("BFL_M", "50")
	o, err := parse(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.Session.M != 50 || o.Session.Cohort != 8 || o.Session.Rounds != 9 {
		t.Errorf("BFL_M=50 over a file of M 40, m 8, T 9: M %d, m %d, T %d; want 50, 8, 9", o.Session.M, o.Session.Cohort, o.Session.Rounds)
	}
	t.Setenv("BFL_COHORT", "7")
	if o, err = parse(nil, io.Discard); err != nil || o.Session.M != 50 || o.Session.Cohort != 7 {
		t.Errorf("BFL_COHORT=7: M %d, m %d (%v); want 50, 7", o.Session.M, o.Session.Cohort, err)
	}
	t.Setenv("BFL_TRUST_PROXY", "true")
	if _, err := parse(nil, io.Discard); err == nil || !strings.Contains(err.Error(), "BFL_TRUST_PROXY") {
		t.Errorf("BFL_TRUST_PROXY=true: %v, want an error naming BFL_TRUST_PROXY", err)
	}
}

func TestParseRejects(t *testing.T) {
	cases := [][]string{
		{"-tls-cert", "x.pem"},
		{"extra-arg"},
		{"-config", "/does/not/exist.json"},
		{"-eval-samples", "-1"},
		{"-demo-shards", "-5"},
	}
	for _, args := range cases {
		if _, err := parse(args, io.Discard); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
	t.Setenv("BFL_M", "many")
	if _, err := parse(nil, io.Discard); err == nil {
		t.Error("a malformed environment value was accepted")
	}
}

func TestRandomCode(t *testing.T) {
	seen := map[string]bool{}
	o := defaults()
	for range 100 {
		c, err := randomCode(o.JoinCodeLength)
		if err != nil || len(c) != 10 || strings.Trim(c, codeAlphabet) != "" {
			t.Fatalf("randomCode = %q, %v", c, err)
		}
		seen[c] = true
	}
	// 100 draws from 32^10 ~ 1.1e15 codes (50 bits) practically never
	// collide.
	if len(seen) != 100 {
		t.Errorf("%d distinct codes in 100 draws", len(seen))
	}
}

func TestHTTPServerTimeouts(t *testing.T) {
	o := defaults()
	srv, err := newHTTPServer(http.NotFoundHandler(), o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if srv.ReadHeaderTimeout != 10*time.Second || srv.IdleTimeout != 60*time.Second || srv.MaxHeaderBytes == 0 {
		t.Errorf("server timeouts: read header %v, idle %v, max header bytes %d", srv.ReadHeaderTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
	o.IdleTimeout = "0s"
	if _, err := newHTTPServer(http.NotFoundHandler(), o, nil); err == nil {
		t.Error("idle timeout 0 accepted")
	}
	if _, err := parse([]string{"-join-code-length", "6"}, io.Discard); err == nil {
		t.Error("a 6-character join code length was accepted")
	}
	// An edge states its rate in its beat as JSON, which has no infinity.
	for _, r := range []string{"inf", "NaN", "-1"} {
		if _, err := parse([]string{"-msg-rate", r}, io.Discard); err == nil || !strings.Contains(err.Error(), "-msg-rate") {
			t.Errorf("-msg-rate %s: %v, want a refusal", r, err)
		}
	}
}

// TestParseNonPrivateReference: -algorithm mu2 works without -rho 0 (the
// demo's privacy target is dropped), and an explicit target is kept so
// that validation can say it does not fit.
func TestParseNonPrivateReference(t *testing.T) {
	o, err := parse([]string{"-algorithm", "mu2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.Session.Rho != 0 || o.Session.Epsilon != 0 || o.Session.Delta != 0 {
		t.Errorf("mu2: target rho_p %v, (%v, %v), want none", o.Session.Rho, o.Session.Epsilon, o.Session.Delta)
	}
	if err := algo.Validate(o.Session); err != nil {
		t.Errorf("mu2 session invalid: %v", err)
	}
	o, err = parse([]string{"-algorithm", "mu2", "-rho", "3"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.Session.Rho != 3 {
		t.Errorf("explicit -rho 3 dropped")
	}
	o, _ = parse(nil, io.Discard)
	if eps, delta := plan.DefaultLessonTarget(); o.Session.Epsilon != eps || o.Session.Delta != delta || o.Session.Rho != 0 {
		t.Errorf("the default nc session's target is rho_p %v, (%v, %v), want plan.DefaultLessonTarget", o.Session.Rho, o.Session.Epsilon, o.Session.Delta)
	}
	// A -rho target replaces the default one (the session stays valid).
	o, err = parse([]string{"-rho", "1.5"}, io.Discard)
	if err != nil || o.Session.Rho != 1.5 || o.Session.Epsilon != 0 || o.Session.Delta != 0 {
		t.Errorf("-rho 1.5: %+v (%v)", o.Session, err)
	}
	o, err = parse([]string{"-epsilon", "4"}, io.Discard)
	if err != nil || o.Session.Epsilon != 4 || o.Session.Delta != plan.DefaultDelta || o.Session.Rho != 0 {
		t.Errorf("-epsilon 4: %+v (%v)", o.Session, err)
	}
}

// TestParseLobby: -lobby (or "lobby" in the config file) starts the
// session in its lobby; the default starts at once.
func TestParseLobby(t *testing.T) {
	o, err := parse(nil, io.Discard)
	if err != nil || o.Lobby {
		t.Fatalf("default: lobby %v, %v", o.Lobby, err)
	}
	if o, err = parse([]string{"-lobby"}, io.Discard); err != nil || !o.Lobby {
		t.Fatalf("-lobby: lobby %v, %v", o.Lobby, err)
	}
}

// TestParseTaskTuning: a built-in row task's session takes the step size
// and clipping bound chosen for it on its validation split unless the
// command line, the environment or the config file gives its own; a
// picture task keeps the demo's.
func TestParseTaskTuning(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(cfg, []byte(`{"session": {"algorithm": "nc", "M": 30, "cohort": 10, "rounds": 200, "batch": 32, "eta": 0.3}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tab, err := task.LookupBuiltin("tabular")
	if err != nil {
		t.Fatal(err)
	}
	text, err := task.LookupBuiltin("text")
	if err != nil {
		t.Fatal(err)
	}
	demo := demoSession()
	tests := []struct {
		name      string
		args      []string
		env       string // BFL_CLIP
		eta, clip float64
	}{
		{"tabular", []string{"-task", "tabular"}, "", tab.Eta, tab.Clip},
		{"text", []string{"-task", "text"}, "", text.Eta, text.Clip},
		{"fashion keeps the demo's", []string{"-task", "fashion"}, "", demo.Eta, demo.Clip},
		{"eta on the command line", []string{"-task", "text", "-eta", "0.02"}, "", 0.02, text.Clip},
		{"clip in the environment", []string{"-task", "text"}, "1", text.Eta, 1},
		{"eta in the config file", []string{"-task", "tabular", "-config", cfg}, "", 0.3, tab.Clip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("BFL_CLIP", tc.env)
			}
			o, err := parse(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if o.Session.Eta != tc.eta || o.Session.Clip != tc.clip {
				t.Errorf("eta %v clip %v, want %v and %v", o.Session.Eta, o.Session.Clip, tc.eta, tc.clip)
			}
		})
	}
	if tab.Eta == demo.Eta || text.Eta == demo.Eta {
		t.Errorf("the row tasks' step sizes (%v, %v) are the demo's %v: nothing tuned", tab.Eta, text.Eta, demo.Eta)
	}
}

// TestRunTLSFilesFirst: certificate files that cannot be read stop the
// coordinator before it creates a session or prints a join link.
func TestRunTLSFilesFirst(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	err := run([]string{"-listen", "127.0.0.1:0", "-data", dir, "-tls-cert", filepath.Join(dir, "none.pem"), "-tls-key", filepath.Join(dir, "none-key.pem")}, &out)
	if err == nil || !strings.Contains(err.Error(), "-tls-cert") {
		t.Fatalf("run = %v, want an error naming -tls-cert", err)
	}
	if strings.Contains(out.String(), "join:") {
		t.Errorf("join links printed before the TLS files were read:\n%s", out.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the data directory holds %d entries, want none", len(entries))
	}
}

// TestRunDataDirFirst: a data directory that cannot be written is named
// as -data before any session is made or dataset read (not reported as
// the dataset's error when the pictures' scratch file fails).
func TestRunDataDirFirst(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err := run([]string{"-listen", "127.0.0.1:0", "-data", filepath.Join(file, "data")}, &out)
	if err == nil || !strings.HasPrefix(err.Error(), "-data ") {
		t.Fatalf("run = %v, want an error naming -data", err)
	}
	if strings.Contains(out.String(), "join:") {
		t.Errorf("join links printed:\n%s", out.String())
	}
}

// TestServerLogQuietOnClosed: the HTTP server's log leaves out the TLS
// handshake error of a connection the server closed itself (connlimit
// refusing one), and keeps every other line.
func TestServerLogQuietOnClosed(t *testing.T) {
	var buf bytes.Buffer
	o, err := parse([]string{"-data", t.TempDir()}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := newHTTPServer(http.NotFoundHandler(), o, slog.New(slog.NewTextHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv.ErrorLog.Print("http: TLS handshake error from 192.0.2.1:4000: read tcp 127.0.0.1:8443->192.0.2.1:4000: use of closed network connection")
	if buf.Len() != 0 {
		t.Errorf("logged %q", buf.String())
	}
	srv.ErrorLog.Print("http: TLS handshake error from 192.0.2.1:4000: remote error: tls: bad certificate")
	if !strings.Contains(buf.String(), "bad certificate") {
		t.Errorf("another handshake error was not logged: %q", buf.String())
	}
}
