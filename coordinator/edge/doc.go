// Package edge is the edge process of the cluster shape (docs/cluster.md):
// it holds device websockets for a session run by a session process
// elsewhere (sessionnode.Node), over the cluster bus. It applies
// the gate and the limits (wsconn.Front, shared with the one-process
// coordinator), forwards hellos, status queries and leaves, validates
// each update (decoded once, finite, within the session's norm bound,
// then the session's tests of each message and of the device's history
// on this edge, edgehist.go) and sends the session one sum per round
// instead of every update; in a shared-noise session it relays each
// device's secure aggregation frames instead (secagg.go), bound to the
// device's connection, and the session process runs the protocol. It
// serves the page's assets itself (site) and proxies the rest of the
// page's HTTP calls to the session process.
//
// It imports nothing of the session core (package coordinator): what it
// knows of a session comes over the bus (bus envelopes, their marks and
// the session parameters in each round), and the session core knows an
// edge only as the sender of those envelopes.
//
// Where things are: edge.go holds the device connections, the session's
// envelopes and the round being collected; edgeround.go a round's
// collection and its sum; edgehist.go the histories of the devices;
// sessiontests.go the session's tests of each update, built once per
// parameters; secagg.go the relay of secure aggregation frames;
// sessionlink.go the publishing side of the bus; handler.go the edge as
// its connections see it (wsconn.Handler); frames.go the frame limit.
//
// Concurrency: Run receives the session's envelopes (in order, on the
// NATS subscription's goroutine) and beats on a timer; each connection
// has the front's reader and writer goroutines. The edge's state is
// guarded by one mutex, which update payloads are decoded outside of.
package edge
