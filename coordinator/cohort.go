package coordinator

import (
	"slices"

	"browserfl/shared/optim"
)

// Who a round asks, and when it closes (issue 23, point 5: idle Sybils
// cannot stall rounds).
//
// A device is *sure* when it has delivered an accepted update since this
// process knew it and has not missed an assigned round since (device.proven
// and device.misses == 0). A round of target m (the session's cohort, or
// fewer eligible devices) asks the old cohort, optim.SampleCohort over the
// sorted eligible ids, and for every member of it that is not sure one more
// sure device from further along the same permutation (over-selection); it
// also asks a few devices that are no longer sampled (misses >=
// Limits.MaxMisses) as probes, beyond the target. The round closes as soon
// as m updates have arrived (or every member still in it has delivered, or
// its deadline passed); members still out are excluded like late updates.
//
// So a new id, or one that has stopped answering, never holds a round:
// the sure members alone can reach the target. It earns a sure place by
// delivering an update that is included (a probe's or an unsure member's
// update counts in the round like any other when it arrives before the
// target). When every eligible device is sure the cohort is exactly the
// old one (optim.SampleCohort(eligible, m)), so an honest session is
// sampled as before and as the simulator samples it.

// cohortPlan is the devices a round asks and the number of updates that
// closes it.
type cohortPlan struct {
	members []string        // sorted
	target  int             // the round closes when this many updates arrived
	unsure  map[string]bool // members that were not sure when asked
	extra   int             // members asked beyond the target (replacements and probes)
	probes  int             // of which devices no longer sampled
}

// probeSalt separates the probes' draw from the cohort's.
const probeSalt = 0x9e3779b97f4a7c15

// planCohort plans round t. eligible are the sampleable ids sorted,
// sure(id) says whether one of them is sure, probeable are the sorted ids
// of devices that are connected and idle but no longer sampled, of which
// at most probes are asked. m is the session's cohort size.
func planCohort(eligible []string, sure func(string) bool, probeable []string, m, probes int, seed uint64, t int) cohortPlan {
	k := min(m, len(eligible))
	perm := optim.SampleCohort(eligible, len(eligible), seed, t) // its first k are SampleCohort(eligible, k)
	p := cohortPlan{target: k, unsure: map[string]bool{}}
	p.members = append(p.members, perm[:k]...)
	need := 0 // unsure members without a sure replacement yet
	for _, id := range perm[:k] {
		if !sure(id) {
			p.unsure[id] = true
			need++
		}
	}
	for _, id := range perm[k:] {
		if need == 0 {
			break
		}
		if sure(id) {
			p.members = append(p.members, id)
			p.extra++
			need--
		}
	}
	if k > 0 && probes > 0 && len(probeable) > 0 {
		for _, id := range optim.SampleCohort(probeable, min(probes, len(probeable)), seed^probeSalt, t) {
			p.members = append(p.members, id)
			p.unsure[id] = true
			p.extra++
			p.probes++
		}
	}
	slices.Sort(p.members)
	return p
}

// probesPerRound is how many devices that are no longer sampled a round
// of cohort m asks as probes: one for every 10 members, at least one.
func probesPerRound(m int) int { return max(1, (m+9)/10) }

// sure reports whether d is a sure member (see planCohort).
func (c *Coordinator) sure(d *device) bool {
	return d.misses == 0 && (d.proven || c.cfg.TrustNewDevices)
}

// probeable reports whether d may be asked as a probe: connected, idle,
// not left, but no longer sampled for its misses.
func (c *Coordinator) probeable(d *device) bool {
	return d.conn != nil && d.round == 0 && !d.left && d.misses >= c.lim.MaxMisses
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
