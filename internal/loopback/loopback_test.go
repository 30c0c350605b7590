package loopback

import (
	"net"
	"strconv"
	"testing"
)

// TestAddrBelowEphemeralRange: every address is on loopback, below the
// kernel's ephemeral range, and free to bind when returned.
func TestAddrBelowEphemeralRange(t *testing.T) {
	top, err := ephemeralStart()
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		addr := Addr(t)
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		if host != "127.0.0.1" || p < lowest || p >= top {
			t.Fatalf("Addr = %s, want 127.0.0.1 with a port in [%d, %d)", addr, lowest, top)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("Addr = %s, not free: %v", addr, err)
		}
		ln.Close()
	}
}
