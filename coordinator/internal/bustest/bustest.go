// Package bustest starts an embedded NATS server with the cluster's
// generated credentials for the tests of the session core and the edge
// (one copy of the set-up both need).
package bustest

import (
	"path/filepath"
	"testing"

	"browserfl/coordinator/bus"
)

// Start starts an embedded NATS server on a free loopback port for the
// test (shut down when it ends), with credentials generated for the
// session and the edges named, and returns its URL and keys.
func Start(tb testing.TB, edges []string) (url string, keys *bus.Keys) {
	tb.Helper()
	keys, err := bus.EnsureKeys(filepath.Join(tb.TempDir(), "nats"), edges)
	if err != nil {
		tb.Fatal(err)
	}
	ns, err := bus.StartNATS(bus.NATSServerConfig{Listen: "127.0.0.1:0", Keys: keys})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(ns.Shutdown)
	return ns.ClientURL(), keys
}
