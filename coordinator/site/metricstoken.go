package site

import (
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
)

// MetricsTokenFor returns the token /metrics needs (Gate.MetricsToken)
// on a server listening at listen: the configured one if set; none on a
// loopback address (only this machine can reach it); otherwise a fresh
// 128-bit random token, generated = true, which the caller prints (so an
// operator can scrape it) and which is never logged. Off loopback
// /metrics is therefore never open: it tells who is connected, how
// many were refused and why, which is no business of the classroom.
func MetricsTokenFor(listen net.Addr, configured string) (token string, generated bool, err error) {
	if configured != "" {
		return configured, false, nil
	}
	if tcp, ok := listen.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return "", false, nil
	}
	b := make([]byte, 16)
	if _, err := crand.Read(b); err != nil {
		return "", false, fmt.Errorf("metrics token: %w", err)
	}
	return hex.EncodeToString(b), true, nil
}
