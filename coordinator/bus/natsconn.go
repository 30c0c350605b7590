package bus

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

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
	// An address off loopback needs TLS.
	Listen string
	// Keys are the components' credentials (required): the server
	// admits only their public keys, each on its own subjects.
	Keys *Keys
	// Prefix is the subjects' first token (default "browserfl").
	Prefix string
	// TLS, if set, serves TLS and requires client certificates signed by
	// TLS.CA.
	TLS NATSTLS
	// MaxPayload bounds one message (default 8 MiB: a round frame or an
	// aggregate of the largest model).
	MaxPayload int32
}

// ErrInsecure is returned by StartNATS for a server that would be
// open: without credentials, or off loopback without TLS.
var ErrInsecure = errors.New("coordinator: refusing an insecure cluster bus")

// ErrNoNATSServer is returned by StartNATS in a coordinator built
// without the embedded NATS server (the build tag nonatsserver, which
// make run uses: the server's code is more than half of the coordinator's
// build). Such a coordinator still joins a cluster through -nats.
var ErrNoNATSServer = errors.New("this coordinator was built without the embedded NATS server")

// BuildWithNATSServer says what to do instead: connect to a NATS server,
// or build the coordinator whole.
const BuildWithNATSServer = "give -nats URL (a running NATS server) and -nats-nkey, or build the whole coordinator: go build -o bin/coordinator ./cmd/coordinator"

// NATSClientConfig configures a component's NATS connection.
type NATSClientConfig struct {
	URL  string // one or more, comma separated
	Name string // shown by the NATS server's monitoring
	// NKey is the component's seed file (required; EnsureKeys writes
	// them): it must be readable by its owner only.
	NKey string
	TLS  NATSTLS
	Log  *slog.Logger
	// Status, if set, records why the connection is down (for a health
	// check).
	Status *NATSStatus
}

// NATSStatus is what a component's NATS connection last reported: an
// edge shows it in /healthz.
type NATSStatus struct {
	mu     sync.Mutex
	err    error
	denied error // the last permission violation
}

// Set records the connection's state; it reports whether err differs
// from the last one recorded (the handlers log a repeated error once).
func (s *NATSStatus) Set(err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := (err == nil) != (s.err == nil) || (err != nil && err.Error() != s.err.Error())
	s.err = err
	if err == nil {
		s.denied = nil
	}
	return changed
}

// Deny records a permission violation; it reports whether it is a new
// one.
func (s *NATSStatus) Deny(err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := s.denied == nil || s.denied.Error() != err.Error()
	s.denied = err
	return changed
}

// Denied is the last operation the NATS server refused this component
// (publishing or subscribing outside its subjects: its key is another
// component's, or -nats-prefix differs), nil if none since connecting.
func (s *NATSStatus) Denied() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.denied
}

// Err is the error of the last failed connection attempt, nil once
// connected.
func (s *NATSStatus) Err() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// ErrAuth wraps the NATS server's refusal of a component's
// credentials.
var ErrAuth = errors.New("the NATS server refused this component's credentials (check -nats-nkey and that the session process lists this edge in -edges)")

// describeNATSError says what a connection error means for the operator.
func describeNATSError(err error) error {
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) ||
		strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		return fmt.Errorf("%w: %v", ErrAuth, err)
	}
	return err
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
	if cfg.NKey == "" {
		return nil, fmt.Errorf("nats connect %s: %w: no seed file (-nats-nkey)", cfg.URL, ErrKeys)
	}
	if _, err := SeedPublicKey(cfg.NKey); err != nil {
		return nil, fmt.Errorf("nats connect %s: %w", cfg.URL, err)
	}
	nkey, err := nats.NkeyOptionFromSeed(cfg.NKey)
	if err != nil {
		return nil, fmt.Errorf("nats connect %s: %w: %v", cfg.URL, ErrKeys, err)
	}
	st := cfg.Status
	if st == nil {
		st = &NATSStatus{}
	}
	opts := []nats.Option{nats.Name(cfg.Name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectBufSize(64 << 20), nats.RetryOnFailedConnect(retry), nkey,
		// A refused key keeps being retried: the edge joins once the
		// session process lists it (each failure is logged once).
		nats.IgnoreAuthErrorAbort(),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				st.Set(err)
				log.Warn("NATS disconnected; reconnecting", "err", err)
			}
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			err = describeNATSError(err)
			if !st.Set(err) {
				return
			}
			if errors.Is(err, ErrAuth) {
				log.Error("cannot join the cluster bus", "err", err)
			} else {
				log.Warn("NATS connection attempt failed; retrying", "err", err)
			}
		}),
		nats.ConnectHandler(func(c *nats.Conn) { st.Set(nil); log.Info("NATS connected", "url", c.ConnectedUrlRedacted()) }),
		nats.ReconnectHandler(func(c *nats.Conn) { st.Set(nil); log.Info("NATS reconnected", "url", c.ConnectedUrlRedacted()) }),
		// A permission violation: this component published or subscribed
		// outside its own subjects (a wrong -nats-prefix or -edge-id).
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				if st.Deny(err) {
					log.Error("the cluster bus refused an operation: is this component's key the one for its id and prefix?", "err", err)
				}
				return
			}
			log.Warn("NATS", "err", describeNATSError(err))
		}),
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
		err = describeNATSError(err)
		st.Set(err)
		return nil, fmt.Errorf("nats connect %s: %w", cfg.URL, err)
	}
	return nc, nil
}
