//go:build !js

package device

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// TestDialStalledServer: a server that accepts the connection and never
// answers the handshake costs the device a dial error once
// HandshakeTimeout has passed (the runtime then retries), not a wait for
// as long as the device runs.
func TestDialStalledServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c // held open, never answered
		}
		close(accepted)
	}()
	defer func() {
		if c := <-accepted; c != nil {
			c.Close()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan error, 1)
	go func() {
		_, err := WebSocket{URL: "ws://" + ln.Addr().String() + "/ws", HandshakeTimeout: 200 * time.Millisecond}.Dial(ctx)
		got <- err
	}()
	select {
	case err := <-got:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Dial = %v, want the handshake's deadline", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Dial still waiting after a minute for a server that never answers")
	}
}
