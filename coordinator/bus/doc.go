// Package bus is the cluster shape's transport between edge processes and
// the session process (docs/cluster.md): the envelopes they exchange over
// NATS (Encode, Decode: a version byte, a kind, a JSON Header, a body),
// the per-member history marks a round carries (Mark), the digests that
// keep credentials off the bus (CodeDigest, Digest), the components' NATS
// keys (Keys: one nkey per component, each confined to its own subjects),
// and the embedded NATS server and client connections (StartNATS,
// ConnectNATS) with their status (NATSStatus). The build tag
// nonatsserver (make run's coordinator) leaves the embedded server out:
// StartNATS then fails with ErrNoNATSServer.
//
// Everything decoded here came off the network: Decode checks the version,
// the kind, the header's size and its id counts (MaxIDs) before anyone
// reads it. The package knows no session, device or connection: the
// session node and the edge (package coordinator) give the envelopes
// their meaning.
package bus
