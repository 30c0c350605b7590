// Package metrics holds the counters every process that serves devices
// keeps (connections, frames, bytes, rejections by kind, rounds and their
// latency) and writes them in the Prometheus text format through one
// registry whose collectors are registered once: the hot paths add to
// atomics, and each scrape reads them with the caller's own rows
// (Row: values the caller keeps, read when /metrics is gathered).
//
// The rejection kinds (Rej*) are the labels of browserfl_rejections_total;
// their names are part of the operators' dashboards and do not change.
// The package knows no session or connection.
package metrics
