//go:build !nonatsserver

package bus

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// The embedded NATS server: a coordinator with -role session and no -nats
// runs one in its own process. make run builds the coordinator without it
// (natsserver_off.go, the build tag nonatsserver); every other build and
// every test has it.

// EmbeddedNATS reports whether this build can start an embedded NATS
// server (StartNATS).
const EmbeddedNATS = true

// EmbeddedServer is a running embedded NATS server.
type EmbeddedServer = server.Server

// StartNATS starts an embedded NATS server and waits until it accepts
// clients. Only the components in cfg.Keys may connect, each with the
// permissions of its role (buskeys.go). It refuses to listen off
// loopback without TLS. Stop it with Shutdown (and WaitForShutdown).
func StartNATS(cfg NATSServerConfig) (*EmbeddedServer, error) {
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("nats listen address %q: %w", cfg.Listen, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("nats listen port %q: %w", port, err)
	}
	if cfg.Keys == nil || cfg.Keys.Session == "" {
		return nil, fmt.Errorf("%w: no credentials (EnsureKeys)", ErrInsecure)
	}
	if !cfg.TLS.enabled() && !loopbackHost(host) {
		return nil, fmt.Errorf("%w: %s is reachable from other machines: give the NATS server TLS (-nats-ca, -nats-cert, -nats-key) or listen on 127.0.0.1",
			ErrInsecure, cfg.Listen)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "browserfl"
	}
	if err := CheckEdgeID(cfg.Prefix); err != nil {
		return nil, fmt.Errorf("nats subject prefix: %w", err)
	}
	if cfg.MaxPayload <= 0 {
		cfg.MaxPayload = 8 << 20
	}
	opts := &server.Options{Host: host, Port: p, NoSigs: true, NoLog: true, MaxPayload: cfg.MaxPayload,
		MaxPending: 64 << 20, Nkeys: cfg.Keys.NATSUsers(cfg.Prefix), ServerName: "browserfl-embedded"}
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

// loopbackHost reports whether host names this machine only (an empty
// host or 0.0.0.0 listens on every interface).
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// NATSUsers are the embedded server's users: the session and each edge,
// each allowed its own subjects only (under prefix).
func (k *Keys) NATSUsers(prefix string) []*server.NkeyUser {
	perm := func(pub, sub string) *server.Permissions {
		return &server.Permissions{Publish: &server.SubjectPermission{Allow: []string{pub}},
			Subscribe: &server.SubjectPermission{Allow: []string{sub}}}
	}
	users := []*server.NkeyUser{{Nkey: k.Session, Permissions: perm(prefix+".down.*", prefix+".up.*")}}
	ids := make([]string, 0, len(k.Edges))
	for id := range k.Edges {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		users = append(users, &server.NkeyUser{Nkey: k.Edges[id], Permissions: perm(prefix+".up."+id, prefix+".down."+id)})
	}
	return users
}
