package coordinator

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// NATSTLS names the PEM files of a component's TLS between the cluster's
// processes: its own certificate and key, and the CA that signed the
// others' (docs/cluster.md, "TLS between components").
type NATSTLS struct {
	CA, Cert, Key string
}

func (t NATSTLS) enabled() bool { return t.CA != "" || t.Cert != "" || t.Key != "" }

// NATSServerConfig configures a NATS server embedded in this process
// (the single-binary and test setups; production runs a NATS cluster).
type NATSServerConfig struct {
	// Listen is the client address, host:port (port 0: any free port).
	Listen string
	// Token, if set, is required of every client.
	Token string
	// TLS, if set, serves TLS and requires client certificates signed by
	// TLS.CA.
	TLS NATSTLS
	// MaxPayload bounds one message (default 8 MiB: a round frame or an
	// aggregate of the largest model).
	MaxPayload int32
}

// StartNATS starts an embedded NATS server and waits until it accepts
// clients. Stop it with Shutdown (and WaitForShutdown).
func StartNATS(cfg NATSServerConfig) (*server.Server, error) {
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("nats listen address %q: %w", cfg.Listen, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("nats listen port %q: %w", port, err)
	}
	if cfg.MaxPayload <= 0 {
		cfg.MaxPayload = 8 << 20
	}
	opts := &server.Options{Host: host, Port: p, NoSigs: true, NoLog: true, MaxPayload: cfg.MaxPayload,
		MaxPending: 64 << 20, Authorization: cfg.Token, ServerName: "browserfl-embedded"}
	if p == 0 {
		opts.Port = server.RANDOM_PORT
	}
	if cfg.TLS.enabled() {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: cfg.TLS.Cert, KeyFile: cfg.TLS.Key,
			CaFile: cfg.TLS.CA, Verify: true})
		if err != nil {
			return nil, fmt.Errorf("nats server TLS: %w", err)
		}
		opts.TLSConfig, opts.TLS, opts.TLSVerify = tc, true, true
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("nats server: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, errors.New("nats server: not ready after 10 s")
	}
	return s, nil
}

// NATSClientConfig configures a component's NATS connection.
type NATSClientConfig struct {
	URL   string // one or more, comma separated
	Name  string // shown by the NATS server's monitoring
	Token string
	TLS   NATSTLS
	Log   *slog.Logger
}

// ConnectNATS connects with unlimited reconnects (a component outlives a
// NATS restart; messages published meanwhile are buffered, up to 64 MiB).
// It returns at once even if NATS cannot be reached yet: the connection
// keeps trying.
func ConnectNATS(cfg NATSClientConfig) (*nats.Conn, error) {
	return connectNATS(cfg, true)
}

// ConnectNATSOnce is ConnectNATS that fails if the first connection
// attempt fails (checks, and tests of TLS and authentication).
func ConnectNATSOnce(cfg NATSClientConfig) (*nats.Conn, error) {
	return connectNATS(cfg, false)
}

func connectNATS(cfg NATSClientConfig, retry bool) (*nats.Conn, error) {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	opts := []nats.Option{nats.Name(cfg.Name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectBufSize(64 << 20), nats.RetryOnFailedConnect(retry),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected; reconnecting", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("NATS reconnected", "url", c.ConnectedUrlRedacted()) }),
	}
	if cfg.Token != "" {
		opts = append(opts, nats.Token(cfg.Token))
	}
	if cfg.TLS.enabled() {
		opts = append(opts, nats.Secure(&tls.Config{MinVersion: tls.VersionTLS12}))
		if cfg.TLS.CA != "" {
			opts = append(opts, nats.RootCAs(cfg.TLS.CA))
		}
		if cfg.TLS.Cert != "" || cfg.TLS.Key != "" {
			opts = append(opts, nats.ClientCert(cfg.TLS.Cert, cfg.TLS.Key))
		}
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("nats connect %s: %w", cfg.URL, err)
	}
	return nc, nil
}
