// Package coordinator runs a federated-learning session for devices that
// connect over websockets: it admits devices (join code; a device id and
// secret issued at first contact and required to resume), samples a
// cohort each round, sends the round's query points, collects updates
// until all arrived or the deadline passed, calls the algorithm's server
// half (shared/optim; the coordinator never aggregates by itself) and
// commits the round durably before it tells any device its update was
// included. The teacher's controls (Start, Pause, Resume, End, Remove)
// and the Status snapshot (its types: coordinator/view) are here; the
// HTTP API over a session is coordinator/api, above this package.
//
// This package is the session core; its parts live in sub-packages that
// import nothing of it (docs/design.md, "Layout"): store (the bbolt
// store), gate (admission), wsconn (the device websockets every process
// shares, plugged in through wsconn.Handler), bus (the cluster bus),
// metrics (counters and their exposition), shards (demo data), view
// (what a session shows) and site (what the HTTP side serves that knows
// no session: the page's assets, the dashboard's files, headers, join
// URLs and QR codes). Above it, api serves a session over HTTP,
// sessions holds the Host, which runs one data directory's sessions, and
// sessionnode serves a session to the cluster shape's edges over NATS
// (it calls back in through Relay); all use exported methods only.
// Beside them, edge holds the cluster shape's edge process, which meets
// the session core (through its session node) only on the cluster bus.
//
// Invariants:
//   - Commit before acknowledge (DESIGN principle 3): the decision
//     "included" for round t is sent only after one bbolt transaction has
//     stored the server state after round t, round t's included device
//     ids and the committed counter. A decision is final; a device that
//     lost it asks again (hello.pending or status) and gets the same
//     answer from the store. A round that was open when the process died
//     was never committed, and its devices are told "excluded".
//   - Each update is either in exactly one committed round or in none:
//     the included set is frozen when the round closes; late updates,
//     duplicates and updates from devices that reconnected without them
//     are never added afterwards.
//   - A device is in at most one round: only connected devices without an
//     undecided assignment are eligible.
//   - Cohorts are uniform without replacement over the sorted eligible ids
//     with a generator seeded by (Config.Seed, t); seed and sizes are
//     logged.
//   - Normalisation: the server half divides by the session's m even when
//     fewer updates arrive (missing devices count as zero messages), which
//     keeps qtilde = q + (1/m) sum_i Y_i exact; see shared/optim.
//   - Nothing from the network is trusted: frames are decoded by
//     shared/wire under size and dimension limits, payloads by
//     shared/mechanism's validating decoder before they can reach the
//     server half; a bad frame closes only its connection and is counted.
//     No secret or vector is logged.
//
// Concurrency: one goroutine (Run) drives rounds; each connection has a
// reader goroutine (started by wsconn.Front.ServeWS once the device is admitted) and a
// bounded outbox drained by a writer goroutine that runs only while
// frames are queued; heartbeats run on a timer. Shared state is guarded
// by one mutex, which update payloads are decoded and validated outside
// of; the server half is touched only by Run.
package coordinator
