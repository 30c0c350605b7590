// Package roster holds a session's device records: who is connected on
// which link, which round each device is assigned in, its standing
// (missed rounds, proven, refused updates), its update history for the
// plausibility tests, its nickname and what the dashboard lists of it.
// The session core (package coordinator) keeps one Roster and calls it
// under its own lock; nothing here locks. The Roster answers which
// devices a round may ask (eligible or as probes, cohort.go), whether a
// nickname looks like a present one, and the device counts and people
// list of the dashboard (view.go).
package roster
