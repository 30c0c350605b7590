// Package wsconn is the device-facing half every process that holds
// device websockets shares (the session process and each edge): the
// websocket upgrade with its origin check and connection caps, the hello
// under a timeout, frames read under the size limit and a per-connection
// message rate, decoded by shared/wire, and each connection's bounded
// outbox drained by a writer goroutine that runs only while frames are
// queued, with heartbeats on a timer (Front, Conn). What a device's
// hello, updates and questions mean is the Handler's business: the
// session core decides them, an edge forwards them.
//
// Invariants: nothing a device sends reaches the Handler before the
// front has applied the gate (GateHello), the limits (Limits) and
// decoding; a connection that cannot keep up (a full outbox, a write or
// a ping that times out) is closed and counted, never waited for by the
// caller, so a round never blocks on one slow device. Read buffers and
// decoded vectors are reused through free lists (FreeList) bounded in
// bytes.
package wsconn
