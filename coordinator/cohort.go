package coordinator

// Who a round asks and when it closes is engine.PlanCohort's rule; this
// file says which of the coordinator's devices are sure and which may be
// probed.

// sure reports whether d is a sure member (engine.PlanCohort): it has
// delivered an accepted update since this process knew it (or new devices
// are trusted) and has not missed an assigned round since.
func (c *Coordinator) sure(d *device) bool {
	return d.misses == 0 && (d.proven || c.cfg.TrustNewDevices)
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
	return askable(d) && d.misses >= c.front.Lim.MaxMisses
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
