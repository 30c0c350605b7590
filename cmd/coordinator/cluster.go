package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"browserfl/coordinator"
	"browserfl/coordinator/bus"
	"browserfl/coordinator/edge"
	"browserfl/coordinator/gate"
	"browserfl/coordinator/sessionnode"
	"browserfl/coordinator/site"
	"browserfl/coordinator/wsconn"
	"browserfl/web"
)

func (o options) natsTLS() bus.NATSTLS {
	return bus.NATSTLS{CA: o.NATSCA, Cert: o.NATSCert, Key: o.NATSKey}
}

// sessionNode connects the session process to NATS (starting an embedded
// server without -nats) and returns the host's Attach: every session's
// coordinator gets a sessionnode.Node.
func sessionNode(o options, log *slog.Logger) (attach func(context.Context, *coordinator.Coordinator) error, closeAll func(), err error) {
	natsURL, seed := o.NATS, o.NATSNKey
	var stop func()
	if natsURL == "" {
		keys, err := bus.EnsureKeys(filepath.Join(o.DataDir, "nats"), o.Edges)
		if err != nil {
			return nil, nil, err
		}
		srv, err := bus.StartNATS(bus.NATSServerConfig{Listen: o.NATSListen, Keys: keys, Prefix: o.NATSPrefix,
			TLS: o.natsTLS()})
		if err != nil {
			return nil, nil, err
		}
		if seed == "" {
			seed = bus.SessionSeedFile(keys.Dir)
		}
		for _, id := range o.Edges {
			log.Info("NATS key of an edge: copy it to the edge's machine (0600) and give it -nats-nkey", "edge", id,
				"file", bus.EdgeSeedFile(keys.Dir, id), "public_key", keys.Edges[id])
		}
		stop = func() { srv.Shutdown(); srv.WaitForShutdown() }
		natsURL = srv.ClientURL()
		if o.NATSCA != "" {
			natsURL = strings.Replace(natsURL, "nats://", "tls://", 1)
		}
		log.Info("embedded NATS server: edges connect with -nats "+natsURL, "listen", o.NATSListen)
	}
	nc, err := bus.ConnectNATS(bus.NATSClientConfig{URL: natsURL, Name: "browserfl-session",
		NKey: seed, TLS: o.natsTLS(), Log: log})
	if err != nil {
		if stop != nil {
			stop()
		}
		return nil, nil, err
	}
	closeAll = func() {
		nc.Drain()
		if stop != nil {
			stop()
		}
	}
	attach = func(ctx context.Context, c *coordinator.Coordinator) error {
		node, err := sessionnode.New(c, sessionnode.Config{Conn: nc, Prefix: o.NATSPrefix, Edges: o.Edges})
		if err != nil {
			return err
		}
		go func() {
			if err := node.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("session node stopped", "err", err)
			}
		}()
		return nil
	}
	return attach, closeAll, nil
}

// runEdge runs an edge process: device websockets and the page, with the
// session's rounds decided by the session process over NATS.
func runEdge(o options, log *slog.Logger, stderr io.Writer) error {
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	metricsGenerated, err := o.metricsToken(ln.Addr())
	if err != nil {
		return err
	}
	id := o.EdgeID
	if id == "" {
		// The key's file name, as the session process wrote it.
		base := filepath.Base(o.NATSNKey)
		if !strings.HasPrefix(base, "edge-") || !strings.HasSuffix(base, ".nk") {
			return fmt.Errorf("-edge-id: give the edge's id (its key file %s is not named edge-ID.nk)", o.NATSNKey)
		}
		id = strings.TrimSuffix(strings.TrimPrefix(base, "edge-"), ".nk")
	}
	edgeLog := log // edge.New adds the edge's id to its own lines
	log = log.With("edge", id)
	var sessionURL *url.URL
	if o.SessionURL != "" {
		if sessionURL, err = url.Parse(o.SessionURL); err != nil || sessionURL.Host == "" {
			return fmt.Errorf("-session-url %q: want http(s)://host:port", o.SessionURL)
		}
	}
	status := &bus.NATSStatus{}
	nc, err := bus.ConnectNATS(bus.NATSClientConfig{URL: o.NATS, Name: "browserfl-edge-" + id,
		NKey: o.NATSNKey, TLS: o.natsTLS(), Log: log, Status: status})
	if err != nil {
		return err
	}
	defer nc.Drain()
	e, err := edge.New(edge.Config{ID: id, Conn: nc, Status: status, Prefix: o.NATSPrefix,
		Limits: wsconn.Limits{MaxDevices: o.MaxDevices, MsgRate: o.MsgRate}, AllowedOrigins: o.Origins, Logger: edgeLog,
		Gate: gate.Config{RegisterRate: o.RegisterRate, RegisterGlobalRate: o.RegisterGlobalRate,
			PreHelloPerAddress: o.PreHelloPerAddress, TrustedProxies: o.TrustProxy, MetricsToken: o.MetricsToken}})
	if err != nil {
		return err
	}
	index, err := o.index()
	if err != nil {
		return err
	}
	srv, err := newHTTPServer(e.Handler(site.Assets{Index: index, Web: web.FS()}, sessionURL), o, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "browserfl edge %s: devices join at %s://%s/?code=<the session's join code>\n", id, o.scheme(), ln.Addr())
	if metricsGenerated {
		printMetricsToken(stderr, o.MetricsToken)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srvErr := serve(srv, ln, o)
	runErr := make(chan error, 1)
	go func() { runErr <- e.Run(ctx) }()
	var result error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-srvErr:
		result = fmt.Errorf("http: %w", err)
	case err := <-runErr:
		result = err
	}
	stop()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	return result
}
