// Package loadtest holds the measuring tools of cmd/loadtest, which
// holds the scenarios: child processes in their own process groups and
// their figures from /proc (RSS, peak RSS, CPU, system calls), the
// open-file limit, the plain-WebSocket baseline server and its clients
// (what the same frames cost a server that does nothing else), a
// Prometheus page's samples, a tap counting the cluster bus's envelopes
// on NATS, the coordinator's session API as the load test drives it (a
// paused coordinator, the teacher's actions, the round records) and the
// alternating blocks of a lesson run two ways. None of it knows a
// session's parameters.
package loadtest
