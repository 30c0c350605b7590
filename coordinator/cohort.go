package coordinator

import (
	"slices"
	"time"
)

// Who a round asks and when it closes is engine.PlanCohort's rule; this
// file says which of the coordinator's devices are sure and which may be
// probed.

// sure reports whether d is a sure member (engine.PlanCohort): it has
// delivered an accepted update since this process knew it (or new devices
// are trusted) and has not missed an assigned round since.
func (c *Coordinator) sure(d *device) bool {
	return d.standing.Sure(c.cfg.TrustNewDevices)
}

// askable reports whether a round may ask d at all: connected, not in a
// round, not left and not removed by the teacher (a removed device's
// connection stays set until its close is read, and must not be asked in
// that window). eligible and probeable split the askable devices by
// their misses.
func askable(d *device) bool {
	return d.conn != nil && d.round == 0 && !d.left && !d.removed
}

// probeable reports whether d may be asked as a probe: askable, but no
// longer sampled for its misses.
func (c *Coordinator) probeable(d *device) bool {
	return askable(d) && !d.standing.Sampled(c.front.Lim.MaxMisses)
}

// probeableLocked lists the probeable devices, sorted by id.
func (c *Coordinator) probeableLocked() []string {
	var ids []string
	for _, d := range c.order {
		if c.probeable(d) {
			ids = append(ids, d.id)
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
// round (nextRecoveryPause) bounds what idle ids can do with them.
func recoverable(d *device) bool { return d.standing.Recoverable() }

// probesLocked lists the probeable devices a round may ask when eligible
// devices are eligible: all of them as probes beside a sampled cohort;
// with none eligible, the recoverable ones for a recovery round, and none
// while the pause after an unanswered recovery round runs.
func (c *Coordinator) probesLocked(eligible int, now time.Time) []string {
	ids := c.probeableLocked()
	if eligible > 0 {
		return ids
	}
	if now.Before(c.recoveryAfter) {
		return nil
	}
	return slices.DeleteFunc(ids, func(id string) bool { return !recoverable(c.devices[id]) })
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

// nextRecoveryPause is the pause after a round, given the one before:
// none once a round included an update; doubled (from minRecoveryPause,
// at most maxRecoveryPause) after a recovery round that included none;
// unchanged after an ordinary round that included none.
func nextRecoveryPause(recovery, included bool, prev time.Duration) time.Duration {
	switch {
	case included:
		return 0
	case !recovery:
		return prev
	default:
		return min(max(2*prev, minRecoveryPause), maxRecoveryPause)
	}
}
