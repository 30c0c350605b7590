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

// probeable reports whether d may be asked as a probe: connected, idle,
// not left, but no longer sampled for its misses.
func (c *Coordinator) probeable(d *device) bool {
	return d.conn != nil && d.round == 0 && !d.left && d.misses >= c.front.Lim.MaxMisses
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
