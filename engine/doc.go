// Package engine holds the rules of one round that the coordinator and
// the simulator share, so that each rule has one home (DESIGN principle 1:
// a simulator result is a result about the product).
//
// A round runs in eight stages; the engine owns the rules of five and the
// shells (coordinator, sim) own the transport of the other three:
//
//	plan     engine    PlanCohort: who is asked, and the target of updates
//	ask      shell     the round frame to each member (websocket, NATS, or a call)
//	collect  shell     updates arrive (concurrently live, in order offline)
//	check    engine    Gate: plausible.Checker, or the norm bound alone (research)
//	close    engine    Included: the included ids, sorted
//	apply    engine    Apply: summed in sorted order, ApplySum or Apply; Servable
//	commit   shell     the store (coordinator), the records (sim)
//	decide   engine    Missed: which silent members missed the round
//
// In a shared-noise session (wire.SharedNoiseAlgorithm) the collect stage
// is a secure aggregation, whose step rules are SecAggRound's: the shell
// hands the engine one sum, carried by the first included device.
//
// The package is pure: no goroutines, no I/O, no clock. Its functions are
// generic over the device id (a string in the coordinator, an index in the
// simulator), so both shells call the same code with their own ids.
package engine
