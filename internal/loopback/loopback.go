// Package loopback gives tests a loopback address for a server they start
// in another process, or stop and start again on the same address.
//
// Asking the kernel for port 0 and closing the listener leaves a window in
// which the port is free: the kernel hands ports out of its ephemeral range
// to every other listener on port 0 and every outgoing connection on the
// machine (make test runs several test binaries side by side), so another
// test's server can take the port before the child binds it, or while it
// is down between two lives. A device that then dials the address meets a
// stranger, whose join code is not its own, and is refused for good. The
// ports given here lie below the ephemeral range, which the kernel never
// hands out, so only another caller of this package choosing the same one
// of about 22,000 ports at the same moment could take it.
package loopback

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// lowest is the lowest port Addr gives.
const lowest = 10000

// Addr returns a 127.0.0.1 address whose port was free a moment ago and
// lies below the kernel's ephemeral range.
func Addr(tb testing.TB) string {
	tb.Helper()
	top := ephemeralStart()
	for range 200 {
		port := lowest + rand.IntN(top-lowest)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken: try another
		}
		addr := ln.Addr().String()
		if err := ln.Close(); err != nil {
			tb.Fatalf("loopback: closing %s: %v", addr, err)
		}
		return addr
	}
	tb.Fatalf("loopback: no free port in [%d, %d) after 200 tries", lowest, top)
	return ""
}

// ephemeralStart is the first port of the kernel's ephemeral range
// (Linux's default 32768 where the range cannot be read).
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo <= lowest+1000 {
		return 32768
	}
	return lo
}
