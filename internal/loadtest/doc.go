// Package loadtest holds the measuring tools of cmd/loadtest, which
// holds the scenarios: child processes in their own process groups and
// their figures from /proc (RSS, peak RSS, CPU, system calls), the
// open-file limit, the plain-WebSocket baseline server and its clients
// (what the same frames cost a server that does nothing else), a
// Prometheus page's samples, and a tap counting the cluster bus's
// envelopes on NATS. None of it knows a session's parameters.
package loadtest
