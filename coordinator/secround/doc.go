// Package secround runs the secure aggregation of a shared-noise
// session's rounds (wire.SharedNoiseAlgorithm) for the session core:
// engine.SecAggRound over shared/secagg, so the coordinator holds only
// masked vectors and, if at least the threshold of devices stay to the
// end, their sum.
//
// The round frame asks the members as in every mode; each member with a
// signing key (wire.Hello.SignKey) then gets its setup (Session.Start),
// and the steps follow (Round.Collect), each closed when every device
// expected has answered or the session's round deadline has passed since
// it opened. A device whose masked input arrived is held in the round like
// a delivered update (it is included if the round completes); one that
// leaves before is dropped from it like a device that did not answer
// (Round.Gone). A secure aggregation below its threshold fails the round,
// which the coordinator then discards.
//
// The coordinator calls a Round under its own lock, except Collect, which
// takes that lock itself (it is given it) around each step's bookkeeping
// and closes the steps outside it.
package secround
