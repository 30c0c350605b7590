package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"browserfl/coordinator/gate"
)

// TestParseTrustProxy: -trust-proxy from the command line, the
// environment and the config file (string or list), and a clear startup
// error for the old boolean form and a bad list.
func TestParseTrustProxy(t *testing.T) {
	config := func(t *testing.T, v string) string {
		p := filepath.Join(t.TempDir(), "c.json")
		if err := os.WriteFile(p, []byte(`{"trust_proxy": `+v+`}`), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		args []string
		env  string
		want string // the parsed list, or a word of the error
		ok   bool
	}{
		{"default: no proxy", nil, "", "", true},
		{"flag", []string{"-trust-proxy", "10.0.0.0/8,127.0.0.1/32"}, "", "10.0.0.0/8,127.0.0.1/32", true},
		{"environment", nil, "192.168.0.0/16", "192.168.0.0/16", true},
		{"config string", []string{"-config", config(t, `"10.0.0.0/8, ::1"`)}, "", "10.0.0.0/8,::1/128", true},
		{"config list", []string{"-config", config(t, `["10.0.0.0/8", "127.0.0.1"]`)}, "", "10.0.0.0/8,127.0.0.1/32", true},
		{"flag over config", []string{"-config", config(t, `"10.0.0.0/8"`), "-trust-proxy", "172.16.0.0/12"}, "", "172.16.0.0/12", true},
		{"old form on the command line", []string{"-trust-proxy=true"}, "", "old on/off form", false},
		{"old form in the environment", nil, "true", "old on/off form", false},
		{"old form in the config file", []string{"-config", config(t, `true`)}, "", "old on/off form", false},
		{"old form followed by another flag", []string{"-trust-proxy", "-listen", ":8080"}, "", "old on/off form", false},
		{"everyone", []string{"-trust-proxy", "0.0.0.0/0"}, "", "every address", false},
		{"bare flag", []string{"-trust-proxy"}, "", "needs an argument", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("BFL_TRUST_PROXY", tc.env)
			}
			o, err := parse(tc.args, io.Discard)
			if !tc.ok {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("parse(%q) = %v, want an error saying %q", tc.args, err, tc.want)
				}
				// The flag package prints its Value's error without wrapping it.
				if !slices.ContainsFunc(tc.args, func(a string) bool { return strings.HasPrefix(a, "-trust-proxy") }) &&
					!errors.Is(err, gate.ErrTrustedProxies) {
					t.Errorf("error %v does not wrap ErrTrustedProxies", err)
				}
				return
			}
			if err != nil || o.TrustProxy.String() != tc.want {
				t.Errorf("parse(%q) = %q, %v; want %q", tc.args, o.TrustProxy.String(), err, tc.want)
			}
		})
	}
}
