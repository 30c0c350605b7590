// Package device is the platform-independent device runtime: the loop that
// connects to a coordinator, says hello or resumes with its device id and
// secret, checks the session against its owner's privacy budget,
// answers round assignments through an optim.Device (the same device half
// the simulator runs), and persists everything through a small Storage
// interface. The native headless device (cmd/device), the load tool
// (cmd/loadtest) and the WebAssembly page (wasm/) all run this code.
//
// Invariants (DESIGN principle 3, exactly-once noise state):
//   - The state with the pending update of round T (ledger charged, noise
//     state held as pending, Pending = T) is saved before the update is
//     written to the socket. A device that crashes after that point
//     resumes with hello.pending = T and learns the decision.
//   - The pending noise state is committed (optim.Device.Commit) only on a
//     decision "included" from the coordinator, which sends it only after
//     the round is durably committed; it is discarded (Abort) only on
//     "excluded". Each decision is applied at most once: a decision for a
//     round other than the pending one is ignored.
//   - A device is in at most one round: it does not answer a new
//     assignment while an update is undecided.
//   - The device sets a session up only for data that fits it: the
//     session's task (plan.SessionTask, which must be valid) is the task
//     the data was encoded for (Config.Task; nil for pictures), and every
//     sample has the session's features and a label below its classes
//     (ErrWrongData otherwise).
//   - The device refuses a session whose worst-case privacy cost (plus
//     Config.Spent) exceeds its owner's budget (Config.Budget: epsilon at
//     the owner's delta, default epsilon 8 at 1e-5; never read at the
//     session's delta), whatever the coordinator says. No budget at all
//     takes Config.Unlimited.
//
// The runtime reaches the coordinator through a Transport, whose Dial
// returns a Conn (Read, Write, SetReadLimit, Close, with a websocket
// connection's semantics; natively *websocket.Conn satisfies it). The
// native default is WebSocket (github.com/coder/websocket), built from
// Config.URL; the page gives its own (wasm/socket, over the browser's
// WebSocket, so that the page links no net/http); the package
// device/memtransport
// connects a runtime to a peer in the same process (tests, the
// simulator), with the same read limit, close codes and context
// behaviour.
//
// The code is in three parts. A Runtime (runtime.go) holds what outlives
// a connection: the saved state, the device half, the data and the round
// work (prepare, save, send). A link (link.go; secagg.go for a
// shared-noise round's secure aggregation) is one connection's read
// loop: it takes the coordinator's messages in order, with what lives
// only as long as the connection (the last round's model, the round's
// secure aggregation). The presence (presence.go) is the current
// connection and the leave state, under a lock of its own that Leave
// takes from a page's event handler.
//
// Events (Config.OnEvent) are delivered on Run's goroutine, in the order
// they happen, after the runtime has released its locks: a callback may
// call back into the runtime (State, Leave).
//
// WatchPrepared wraps a device-half constructor so that a user interface
// on the same device sees each release before and after its noise (the
// page's "what your phone sent"): in memory only, with the update sent and
// the state saved unchanged, bit for bit.
//
// Nothing here uses the os package; FileStorage (native only, build tag
// !js) is in its own file. The browser supplies an IndexedDB Storage.
package device
