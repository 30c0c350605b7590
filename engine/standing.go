package engine

// DefaultMaxMisses is how many consecutive asked rounds a device may miss
// before it is no longer sampled but only probed (Standing.Sampled).
const DefaultMaxMisses = 2

// Standing is the server's record of how a device has answered the
// rounds it was asked, which the plan stage reads (PlanCohort: who may be
// sampled, who only probed, who is sure) and the decide stage writes
// (Missed). A shell keeps one with each device it knows (the coordinator
// with its device record, the simulator per device) and changes it only
// through its methods, so what an accepted update or a miss does has one
// home.
type Standing struct {
	misses   int  // consecutive asked rounds it did not answer
	proven   bool // an update of it was accepted since the shell knew it
	rejected int  // its updates the check refused
}

// Misses returns the consecutive asked rounds the device did not answer.
func (s *Standing) Misses() int { return s.misses }

// Rejected returns how many of the device's updates the check refused.
func (s *Standing) Rejected() int { return s.rejected }

// Sure reports whether the device is a sure member: an update of it was
// accepted since the shell knew it (or the shell trusts new devices)
// and it has not missed an asked round since.
func (s *Standing) Sure(trustNew bool) bool { return s.misses == 0 && (s.proven || trustNew) }

// Sampled reports whether a round may sample the device (it has missed
// fewer than maxMisses rounds in a row); one that may not is only asked
// as a probe.
func (s *Standing) Sampled(maxMisses int) bool { return s.misses < maxMisses }

// Recoverable reports whether a recovery round (PlanRecovery) may ask
// the device: none of its updates was refused (a device answering each
// round at once with a refused update would otherwise make such rounds
// follow one another).
func (s *Standing) Recoverable() bool { return s.rejected == 0 }

// Accepted records an accepted update: the device answers its rounds.
func (s *Standing) Accepted() { s.misses, s.proven = 0, true }

// Missed records an asked round the device missed (Missed, or it went
// without its update) and returns its misses in a row.
func (s *Standing) Missed() int {
	s.misses++
	return s.misses
}

// Refused records an update the check refused.
func (s *Standing) Refused() { s.rejected++ }
