//go:build !js

package device_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"browserfl/device"
)

// TestDialStalledServer: a server that accepts every connection and never
// answers the websocket handshake costs the device a failed attempt once
// Config.DialTimeout has passed, and the runtime tries again: it does not
// wait for as long as it runs on the first attempt.
func TestDialStalledServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	held.Add(1)
	go func() { // accepts and holds every connection, never answers
		defer held.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		ln.Close()
		held.Wait()
		for _, c := range conns {
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	timedOut := make(chan struct{}, 16)
	rt, err := device.New(ctx, device.Config{URL: "ws://" + ln.Addr().String() + "/ws", JoinCode: "c",
		Storage: &device.MemStorage{}, Data: samples(8), Unlimited: true,
		DialTimeout: 200 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
		OnEvent: func(e device.Event) {
			if e.Kind == device.EventError && errors.Is(e.Err, context.DeadlineExceeded) {
				select {
				case timedOut <- struct{}{}:
				default:
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	for i := range 2 {
		select {
		case <-timedOut:
		case err := <-done:
			t.Fatalf("Run = %v before its attempt %d timed out", err, i+1)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled once stopped", err)
	}
	mu.Lock()
	n := len(conns)
	mu.Unlock()
	if n < 2 {
		t.Fatalf("%d connections reached the server, want one per attempt (at least 2)", n)
	}
}
