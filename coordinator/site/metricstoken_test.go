package site

import (
	"net"
	"testing"
)

// TestMetricsTokenFor: /metrics is open only on loopback; off loopback
// without a configured token a fresh random one is made (the real binary
// is checked end to end by e2e's TestMetricsOffLoopback).
func TestMetricsTokenFor(t *testing.T) {
	tests := []struct {
		name       string
		addr       net.Addr
		configured string
		open, gen  bool
	}{
		{"loopback v4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "", true, false},
		{"loopback v6", &net.TCPAddr{IP: net.IPv6loopback, Port: 8080}, "", true, false},
		{"all interfaces v4", &net.TCPAddr{IP: net.IPv4zero, Port: 8080}, "", false, true},
		{"all interfaces v6", &net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "", false, true},
		{"LAN address", &net.TCPAddr{IP: net.IPv4(192, 168, 1, 23), Port: 8080}, "", false, true},
		{"configured, off loopback", &net.TCPAddr{IP: net.IPv4zero, Port: 8080}, "mine", false, false},
		{"configured, loopback", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "mine", false, false},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		tok, gen, err := MetricsTokenFor(tc.addr, tc.configured)
		switch {
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case (tok == "") != tc.open || gen != tc.gen:
			t.Errorf("%s: token %q, generated %v; want open %v, generated %v", tc.name, tok, gen, tc.open, tc.gen)
		case tc.configured != "" && tok != tc.configured:
			t.Errorf("%s: token %q, want the configured one", tc.name, tok)
		case gen && (len(tok) != 32 || seen[tok]):
			t.Errorf("%s: generated token %q: want 32 hex digits, fresh each time", tc.name, tok)
		}
		seen[tok] = true
	}
}
