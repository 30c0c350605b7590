package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"browserfl/coordinator"
	"browserfl/coordinator/connlimit"
	"browserfl/coordinator/sessions"
	"browserfl/coordinator/shards"
	"browserfl/coordinator/site"
	"browserfl/shared/wire"
	"browserfl/web"
)

// scheme is the URLs' scheme: https with -tls-cert.
func (o options) scheme() string {
	if o.TLSCert != "" {
		return "https"
	}
	return "http"
}

// printStart warns of a short join code and a binary without the page's
// WebAssembly, and prints the join lines of the host's current session
// (printJoin) at addr, the generated /metrics token and, for the session
// process, how devices reach it.
func printStart(stderr io.Writer, host *sessions.Host, addr net.Addr, o options, ifaces []net.Addr, metricsGenerated bool, log *slog.Logger) {
	joinCode := host.JoinCode()
	if len(wire.NormalizeJoinCode(joinCode)) < 8 {
		log.Warn("the join code is short: with the per-address backoff it resists guessing from a few addresses, not from many; prefer the default random code", "length", len(joinCode))
	}
	if !web.HasWasm() {
		log.Warn("this binary has no embedded device build (app.wasm's compressed forms in web/precompressed): run `make wasm` (or `make run`), then build it, so browsers can join")
	}
	cur := host.Current().Session()
	sizing := fmt.Sprintf("M = %d, m = %d, T = %d", cur.M, cur.Cohort, cur.Rounds)
	if host.Current().State() == coordinator.StateLobby {
		sizing = "in its lobby: sized for the class at Start, \"one lesson\" preset"
	}
	printJoin(stderr, cur, sizing, site.JoinURLs(addr.String(), o.scheme(), joinCode, ifaces), joinCode, host.TeacherSecret())
	if metricsGenerated {
		printMetricsToken(stderr, o.MetricsToken)
	}
	if o.Role == "session" {
		fmt.Fprintf(stderr, "  cluster:   devices join through an edge (coordinator -role edge -nats ... -session-url %s://%s): use the edge's address in the join URL, code %s\n",
			o.scheme(), addr, joinCode)
	}
}

// serveHost serves srv on ln and runs the host until a signal, the HTTP
// server's end or the host's, then shuts both down.
func serveHost(host *sessions.Host, srv *http.Server, ln net.Listener, o options, shards *shards.Set, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srvErr := serve(srv, ln, o)
	runErr := make(chan error, 1)
	go func() { runErr <- host.Run(ctx) }()
	go host.LogWarnings(ctx, shards, 5*time.Second)

	var result error
	runDone := false
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-srvErr:
		result = fmt.Errorf("http: %w", err)
	case err := <-runErr:
		runDone = true
		result = err
	}
	stop()
	// Committed rounds are already durable; an open round is abandoned
	// and its devices learn "excluded" when they resume. Wait for the
	// host (it stops the round loop and closes the stores) so that no
	// commit races a store's Close.
	if !runDone {
		select {
		case err := <-runErr:
			if err != nil && !errors.Is(err, context.Canceled) && result == nil {
				result = err
			}
		case <-time.After(15 * time.Second):
			log.Warn("the host did not stop in 15 s")
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	log.Info("stopped")
	return result
}

// serve serves srv on ln (with TLS when o has a certificate) and
// delivers the server's end.
func serve(srv *http.Server, ln net.Listener, o options) <-chan error {
	done := make(chan error, 1)
	go func() {
		if o.TLSCert != "" {
			done <- srv.ServeTLS(ln, o.TLSCert, o.TLSKey)
		} else {
			done <- srv.Serve(ln)
		}
	}()
	return done
}

// newHTTPServer returns the server with its timeouts: request headers
// must arrive within -read-header-timeout and idle keep-alive
// connections are closed after -idle-timeout. (No read or write timeout:
// they would also cut the long-lived websockets.)
func newHTTPServer(h http.Handler, o options, log *slog.Logger) (*http.Server, error) {
	rh, err := time.ParseDuration(o.ReadHeaderTimeout)
	if err != nil || rh <= 0 {
		return nil, fmt.Errorf("-read-header-timeout %q: want a positive duration", o.ReadHeaderTimeout)
	}
	idle, err := time.ParseDuration(o.IdleTimeout)
	if err != nil || idle <= 0 {
		return nil, fmt.Errorf("-idle-timeout %q: want a positive duration", o.IdleTimeout)
	}
	limit := httpLimit(o, log)
	return &http.Server{Handler: h, ReadHeaderTimeout: rh, IdleTimeout: idle, MaxHeaderBytes: 64 << 10,
		ConnState: limit.ConnState, ErrorLog: slog.NewLogLogger(closedQuiet{log.Handler()}, slog.LevelWarn)}, nil
}

// closedQuiet is the HTTP server's log without the TLS handshake errors
// of connections closed on the server's side (connlimit refuses or
// evicts a connection by closing it before its handshake): connlimit logs
// those itself, once a minute per address, and a client opening
// connections without end would otherwise write a line for each.
type closedQuiet struct{ slog.Handler }

func (h closedQuiet) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "TLS handshake error") && strings.Contains(r.Message, net.ErrClosed.Error()) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

// httpLimit bounds the plain HTTP connections (connlimit): in all a
// quarter of the process's open-file limit (at least 64), so that
// connections held open cannot take the files the websockets and the
// store need; and -http-per-address from one client address (by default
// 1024, at most an eighth of the total; none from a trusted proxy).
func httpLimit(o options, log *slog.Logger) *connlimit.Limit {
	total := 0
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err == nil && r.Cur < 1<<40 {
		total = max(64, int(r.Cur/4))
	}
	per := o.HTTPPerAddress
	switch {
	case per == 0:
		// One address holds at most an eighth of the total by default.
		per = 1024
		if total > 0 {
			per = min(per, max(16, total/8))
		}
	case per < 0:
		per = 0
	}
	trusted := o.TrustProxy
	return &connlimit.Limit{PerAddr: per, Total: total, Log: log,
		Trusted: func(a netip.Addr) bool {
			return slices.ContainsFunc(trusted, func(p netip.Prefix) bool { return p.Contains(a) })
		}}
}
