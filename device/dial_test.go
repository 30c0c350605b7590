//go:build !js

package device_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"browserfl/device"
)

// TestStalledServer: a server that never answers costs the device a failed
// attempt once Config.DialTimeout has passed, and the runtime tries again:
// it does not wait on its first attempt for as long as it runs. Two ways
// to stall: accept the TCP connection and never answer the websocket
// handshake, or complete the handshake, read the hello and say nothing.
// Without either bound the test fails after its one-minute watchdog.
func TestStalledServer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(ln net.Listener, reached func(), stop <-chan struct{})
	}{
		{"handshake never answered", func(ln net.Listener, reached func(), stop <-chan struct{}) {
			var held []net.Conn
			defer func() {
				for _, c := range held {
					c.Close()
				}
			}()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				held = append(held, c)
				reached()
			}
		}},
		{"hello never answered", func(ln net.Listener, reached func(), stop <-chan struct{}) {
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c, err := websocket.Accept(w, r, nil)
				if err != nil {
					return
				}
				defer c.CloseNow()
				if _, _, err := c.Read(r.Context()); err != nil {
					return
				}
				reached() // the hello arrived; no answer follows
				select {
				case <-stop:
				case <-r.Context().Done():
				}
			})}
			srv.Serve(ln)
			srv.Close()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			n := 0
			stop := make(chan struct{})
			served := make(chan struct{})
			go func() {
				defer close(served)
				tc.serve(ln, func() { mu.Lock(); n++; mu.Unlock() }, stop)
			}()
			defer func() {
				close(stop)
				ln.Close()
				<-served
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
			defer mu.Unlock()
			if n < 2 {
				t.Fatalf("%d attempts reached the server's stall, want one per attempt (at least 2)", n)
			}
		})
	}
}

// TestForbiddenEndsRun: a server that answers the websocket handshake
// 403 Forbidden (an Origin it does not accept) refuses the device for
// good. Run returns an error wrapping ErrRefused that quotes the
// server's reason after one attempt, instead of trying again forever.
func TestForbiddenEndsRun(t *testing.T) {
	addr, attempts := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: []string{"class.example"}})
		if err == nil {
			c.CloseNow()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := device.New(ctx, device.Config{URL: "ws://" + addr + "/ws", JoinCode: "c",
		Origin: "http://elsewhere.example", Storage: &device.MemStorage{}, Data: samples(8), Unlimited: true,
		MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = rt.Run(ctx)
	if !errors.Is(err, device.ErrRefused) || !strings.Contains(err.Error(), "elsewhere.example") || !strings.Contains(err.Error(), "-origin") {
		t.Fatalf("Run = %v, want a refusal that quotes the server and names -origin", err)
	}
	if n := attempts(); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
}

// countingServer serves h on loopback until the test ends; it returns
// the address and the count of requests so far.
func countingServer(t *testing.T, h http.HandlerFunc) (addr string, attempts func() int) {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// TestNotAWebsocketEndsRun: a -url that is not the coordinator's
// websocket (a 404, a page answered 200) refuses a device that never
// reached a coordinator for good, after one attempt, with the status and
// a hint to check -url; a device that had its welcome there before (a
// proxy answering for a while as its coordinator restarts) tries again,
// as it does for a full coordinator (503) and a busy one (429).
func TestNotAWebsocketEndsRun(t *testing.T) {
	for _, tc := range []struct {
		status         int
		known, forGood bool
	}{{http.StatusNotFound, false, true}, {http.StatusOK, false, true}, {http.StatusNotFound, true, false},
		{http.StatusServiceUnavailable, false, false}, {http.StatusTooManyRequests, false, false}} {
		t.Run(fmt.Sprintf("%s known %v", http.StatusText(tc.status), tc.known), func(t *testing.T) {
			addr, attempts := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "no such page", tc.status)
			})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st := &device.MemStorage{}
			if tc.known {
				st.Save(ctx, []byte(`{"device_id":"d1","secret":"s1"}`))
			}
			rt, err := device.New(ctx, device.Config{URL: "ws://" + addr + "/nows", JoinCode: "c",
				Storage: st, Data: samples(8), Unlimited: true,
				MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
				OnEvent: func(e device.Event) {
					if e.Kind == device.EventError && attempts() >= 3 {
						cancel() // tried again: enough
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			err = rt.Run(ctx)
			if tc.forGood {
				if n := attempts(); !errors.Is(err, device.ErrRefused) || !strings.Contains(err.Error(), "-url") || n != 1 {
					t.Fatalf("Run = %v after %d attempts, want a refusal naming -url after 1", err, n)
				}
				return
			}
			if n := attempts(); !errors.Is(err, context.Canceled) || n < 3 {
				t.Fatalf("Run = %v after %d attempts, want attempts until stopped", err, n)
			}
		})
	}
}
