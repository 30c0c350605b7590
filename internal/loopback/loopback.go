// Package loopback gives tests and the load tool a loopback address for a
// server they start in another process, or stop and start again on the
// same address.
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
// of about 22,000 ports while it is free could take it (a test whose
// server dies for good stops dialling its address, as a load balancer's
// health check would).
package loopback

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowest is the lowest port Addr gives.
const lowest = 10000

// Free returns a 127.0.0.1 address whose port was free a moment ago and
// lies below the kernel's ephemeral range.
func Free() (string, error) {
	top, err := ephemeralStart()
	if err != nil {
		return "", err
	}
	for range 200 {
		port := lowest + rand.IntN(top-lowest)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken: try another
		}
		addr := ln.Addr().String()
		if err := ln.Close(); err != nil {
			return "", fmt.Errorf("loopback: closing %s: %w", addr, err)
		}
		return addr, nil
	}
	return "", fmt.Errorf("loopback: no free port in [%d, %d) after 200 tries", lowest, top)
}

// TB is what Addr needs of a test (testing.TB has it): the package does
// not import testing, so that a command using Free links no test code.
type TB interface {
	Helper()
	Fatal(args ...any)
}

// Addr is Free for a test: it fails tb if there is no address.
func Addr(tb TB) string {
	tb.Helper()
	addr, err := Free()
	if err != nil {
		tb.Fatal(err)
	}
	return addr
}

// ephemeralStart is the first port of the kernel's ephemeral range
// (Linux's default 32768 where the range cannot be read, as off Linux,
// whose ranges start higher); an error if it leaves fewer than 1,000
// ports above lowest.
func ephemeralStart() (int, error) {
	const path = "/proc/sys/net/ipv4/ip_local_port_range"
	b, err := os.ReadFile(path)
	if err != nil {
		return 32768, nil
	}
	f := strings.Fields(string(b))
	lo, err := 0, fmt.Errorf("loopback: %s reads %q, want two ports", path, b)
	if len(f) == 2 {
		lo, err = strconv.Atoi(f[0])
	}
	if err != nil {
		return 0, err
	}
	if lo < lowest+1000 {
		return 0, fmt.Errorf("loopback: the ephemeral range starts at %d, leaving too few ports in [%d, %d)", lo, lowest, lo)
	}
	return lo, nil
}
