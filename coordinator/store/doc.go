// Package store is a session's durable state in one bbolt file: the
// server half's state after each committed round (the last KeepStates
// kept for a roll back), one record per committed round, the device
// registry (ids and secret hashes; never a secret), the ids the teacher
// removed, the session's parameters and small meta values (the session
// core's lifecycle, the session's start).
//
// Invariant: a round is committed by exactly one transaction
// (CommitRound: state, record and counter together), which is what makes
// the coordinator's inclusion acknowledgements safe to send (commit
// before acknowledge, DESIGN principle 3). The package imports nothing of
// the module: it knows no session, connection or protocol.
package store
