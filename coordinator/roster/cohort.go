package roster

import (
	"slices"
	"time"
)

// Who a round asks and when it closes is engine.PlanCohort's rule; this
// file says which devices are sure and which may be probed.

// Sure reports whether d is a sure member (engine.PlanCohort): it has
// delivered an accepted update since this process knew it (or new devices
// are trusted) and has not missed an assigned round since.
func (r *Roster) Sure(d *Device) bool {
	return d.Standing.Sure(r.trustNew)
}

// Askable reports whether a round may ask d at all: connected, not in a
// round, not left and not removed by the teacher (a removed device's
// connection stays set until its close is read, and must not be asked in
// that window). Eligible and Probeable split the askable devices by
// their misses.
func Askable(d *Device) bool {
	return d.Conn != nil && d.Round == 0 && !d.Left && !d.Removed
}

// Eligible reports whether d may be sampled: it may be asked (Askable)
// and answers its rounds (Rule 7 of the design: only live devices are
// asked).
func (r *Roster) Eligible(d *Device) bool {
	return Askable(d) && d.Standing.Sampled(r.maxMisses)
}

// Probeable reports whether d may be asked as a probe: askable, but no
// longer sampled for its misses.
func (r *Roster) Probeable(d *Device) bool {
	return Askable(d) && !d.Standing.Sampled(r.maxMisses)
}

// Stuck reports whether d is no longer sampled for its misses.
func (r *Roster) Stuck(d *Device) bool { return !d.Standing.Sampled(r.maxMisses) }

// EligibleIDs lists the eligible devices, sorted by id.
func (r *Roster) EligibleIDs() []string {
	var ids []string
	for _, d := range r.order {
		if r.Eligible(d) {
			ids = append(ids, d.ID)
		}
	}
	return ids
}

// CountEligible is len(r.EligibleIDs()) without building the list.
func (r *Roster) CountEligible() int {
	n := 0
	for _, d := range r.order {
		if r.Eligible(d) {
			n++
		}
	}
	return n
}

// Present counts the devices that are, or will soon be, eligible:
// connected, not left and answering their rounds (busy ones included).
func (r *Roster) Present() int {
	n := 0
	for _, d := range r.order {
		if d.Conn != nil && !d.Left && !d.Removed && d.Standing.Sampled(r.maxMisses) {
			n++
		}
	}
	return n
}

// InLobby is the number of devices in the lobby: connected, not left
// and not removed.
func (r *Roster) InLobby() int {
	n := 0
	for _, d := range r.devices {
		if d.Conn != nil && !d.Left && !d.Removed {
			n++
		}
	}
	return n
}

// probeableIDs lists the probeable devices, sorted by id.
func (r *Roster) probeableIDs() []string {
	var ids []string
	for _, d := range r.order {
		if r.Probeable(d) {
			ids = append(ids, d.ID)
		}
	}
	return ids
}

// recoverable reports whether a recovery round (engine.PlanRecovery, when
// no device is eligible) may ask d: none of its updates was rejected (a
// device answering each round at once with a rejected update would
// otherwise make such rounds follow one another). Devices that never
// delivered are asked too: after a restart no device has delivered to
// this process, and a class whose every device then missed two rounds
// would start no round again. The pause after an unanswered recovery
// round (NextRecoveryPause) bounds what idle ids can do with them.
func recoverable(d *Device) bool { return d.Standing.Recoverable() }

// Probes lists the probeable devices a round may ask when eligible
// devices are eligible: all of them as probes beside a sampled cohort;
// with none eligible, the recoverable ones for a recovery round, and none
// before recoveryAfter (the pause after an unanswered recovery round).
func (r *Roster) Probes(eligible int, now, recoveryAfter time.Time) []string {
	ids := r.probeableIDs()
	if eligible > 0 {
		return ids
	}
	if now.Before(recoveryAfter) {
		return nil
	}
	return slices.DeleteFunc(ids, func(id string) bool { return !recoverable(r.devices[id]) })
}

// The pause before the next recovery round after one that included no
// update: it doubles from minRecoveryPause to maxRecoveryPause, so
// connected devices that do not answer (pages waiting for pictures, a
// class away without pausing the lesson, idle fake ids) make at most six
// such rounds in the first two minutes (pauses of 2, 4, 8, 16, 32 s and
// the rounds' own time), then one a minute plus the round's deadline,
// while a class back at its pages waits at most a minute.
const (
	minRecoveryPause = 2 * time.Second
	maxRecoveryPause = time.Minute
)

// NextRecoveryPause is the pause after a round, given the one before:
// none once a round included an update; doubled (from minRecoveryPause,
// at most maxRecoveryPause) after a recovery round that included none;
// unchanged after an ordinary round that included none.
func NextRecoveryPause(recovery, included bool, prev time.Duration) time.Duration {
	switch {
	case included:
		return 0
	case !recovery:
		return prev
	default:
		return min(max(2*prev, minRecoveryPause), maxRecoveryPause)
	}
}
