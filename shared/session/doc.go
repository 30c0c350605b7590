// Package session holds a training session's public parameters, Params:
// the one type the protocol carries (shared/wire's SessionParams is it),
// the algorithms read (shared/optim's Params is it) and the commands'
// session flags set (internal/sessionflag). Every field has one JSON name,
// the protocol's: devices in the field and the coordinator's stored
// sessions speak it.
//
// It is a leaf (it imports nothing of the module), so that the protocol
// and the algorithms share the type without importing each other. Its
// methods are the pure arithmetic of the parameters (the clipping bound in
// force, release counts, step sizes of "local", the threshold of
// "shared"); what needs the algorithms' registry or the privacy
// accounting (validity for an algorithm, whether it is private or
// trusted, the zCDP budget) is in shared/optim/algo, and what needs the
// protocol's limits (a session's bounds on the wire) is in shared/wire.
package session
