//go:build nonatsserver

package bus

import "fmt"

// This build has no embedded NATS server (the build tag nonatsserver:
// make run's coordinator, which needs none for its demo session and
// builds in about a third of the time without the server's code). A
// session process connects to a NATS server with -nats instead.

// EmbeddedNATS reports whether this build can start an embedded NATS
// server (StartNATS).
const EmbeddedNATS = false

// EmbeddedServer stands for the embedded server this build lacks; StartNATS
// never returns one.
type EmbeddedServer struct{}

// ClientURL is the server's client address (none here).
func (*EmbeddedServer) ClientURL() string { return "" }

// Shutdown stops the server (nothing here).
func (*EmbeddedServer) Shutdown() {}

// WaitForShutdown waits for Shutdown (nothing here).
func (*EmbeddedServer) WaitForShutdown() {}

// StartNATS fails with ErrNoNATSServer in this build.
func StartNATS(NATSServerConfig) (*EmbeddedServer, error) {
	return nil, fmt.Errorf("%w: %s", ErrNoNATSServer, BuildWithNATSServer)
}
