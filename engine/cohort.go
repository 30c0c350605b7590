package engine

import (
	"cmp"
	"slices"

	"browserfl/shared/optim"
)

// Who a round asks, and when it closes (idle Sybils
// cannot stall rounds).
//
// A device is *sure* when it has delivered an accepted update since its
// shell knew it and has not missed an assigned round since (the shell
// decides; the simulator's devices are all sure). A round of target m (the
// session's cohort, or fewer eligible devices) asks the old cohort,
// optim.SampleCohort over the sorted eligible ids, and for every member of
// it that is not sure one more sure device from further along the same
// permutation (over-selection); it also asks a few devices that are no
// longer sampled (they missed too many rounds) as probes, beyond the
// target. When no eligible device is sure (a new session, or after a
// restart), the one-process coordinator's rounds ask the other eligible
// devices too, up to AskAllCap. The round closes as soon as m updates have arrived (or every
// member still in it has delivered, or its deadline passed); members still
// out are excluded like late updates.
//
// So a new id, or one that has stopped answering, never holds a round:
// the sure members alone can reach the target. It earns a sure place by
// delivering an update that is included. When every eligible device is
// sure the cohort is exactly optim.SampleCohort(eligible, m), so an
// honest session is sampled as the simulator samples it.

// Plan is the devices a round asks and the number of updates that
// closes it.
type Plan[ID cmp.Ordered] struct {
	Members []ID        // sorted
	Target  int         // the round closes when this many updates arrived
	Unsure  map[ID]bool // members that were not sure when asked
	Extra   int         // members asked beyond the target (replacements and probes)
	Probes  int         // of which devices no longer sampled
	// Recovery: no device was eligible, so every member is a probe
	// (PlanRecovery).
	Recovery bool
}

// probeSalt separates the probes' draw from the cohort's.
const probeSalt = 0x9e3779b97f4a7c15

// PlanCohort plans round t. eligible are the sampleable ids sorted,
// sure(id) says whether one of them is sure, probeable are the sorted ids
// of devices that are connected and idle but no longer sampled, of which
// at most probes are asked. m is the session's cohort size.
//
// askAll is the most members a round asks when no eligible device is sure
// (0: only the cohort); the one-process coordinator gives AskAllCap(m),
// the cluster shape 0 (an edge's sum is all or nothing, so a sum of more
// than m asked members would be refused whole).
func PlanCohort[ID cmp.Ordered](eligible []ID, sure func(ID) bool, probeable []ID, m, probes, askAll int, seed uint64, t int) Plan[ID] {
	k := min(m, len(eligible))
	perm := optim.SampleCohort(eligible, len(eligible), seed, t) // its first k are SampleCohort(eligible, k)
	p := Plan[ID]{Target: k, Unsure: map[ID]bool{}}
	p.Members = append(p.Members, perm[:k]...)
	need := 0 // unsure members without a sure replacement yet
	for _, id := range perm[:k] {
		if !sure(id) {
			p.Unsure[id] = true
			need++
		}
	}
	for _, id := range perm[k:] {
		if need == 0 {
			break
		}
		if sure(id) {
			p.Members = append(p.Members, id)
			p.Extra++
			need--
		}
	}
	if need == k && len(p.Members) == k && askAll > k {
		// Nobody eligible is sure (a new session, or a restart: no
		// device has delivered yet), so there is nobody to replace the
		// unsure members with: ask the other eligible devices too, up to
		// askAll members, so that the first updates to arrive close
		// the round however many of the eligible ids never answer. Each
		// is charged a release if it answers after the target (excluded,
		// like any late update); the next rounds have the first round's
		// m sure devices to over-select with. The loop above went
		// through all of perm[k:] and found no sure device in it.
		for _, id := range perm[k:] {
			if len(p.Members) >= askAll {
				break
			}
			if !sure(id) {
				p.Members = append(p.Members, id)
				p.Unsure[id] = true
				p.Extra++
			}
		}
	}
	if k > 0 && probes > 0 && len(probeable) > 0 {
		for _, id := range optim.SampleCohort(probeable, min(probes, len(probeable)), seed^probeSalt, t) {
			p.Members = append(p.Members, id)
			p.Unsure[id] = true
			p.Extra++
			p.Probes++
		}
	}
	slices.Sort(p.Members)
	return p
}

// PlanRecovery plans round t when no device is eligible but probeable
// (sorted ids of devices no longer sampled for their misses, as the shell
// offers them for such a round) are connected: a class whose every device
// missed rounds (all waiting for their next pictures, say) would otherwise
// start no round again, and so never ask them again. Up to m of them are
// asked, all as probes, drawn with the cohort's seed; the round's target
// is all of them. It is decided and committed like any other round (an
// empty one too, with its members' misses), so a round number is never
// asked twice; the shell decides which devices it offers and how often
// (the coordinator: none with a rejected update, with a pause that grows
// while such rounds stay empty).
func PlanRecovery[ID cmp.Ordered](probeable []ID, m int, seed uint64, t int) Plan[ID] {
	k := min(m, len(probeable))
	p := Plan[ID]{Unsure: map[ID]bool{}, Recovery: true}
	p.Members = append(p.Members, optim.SampleCohort(probeable, k, seed^probeSalt, t)...)
	for _, id := range p.Members {
		p.Unsure[id] = true
	}
	p.Target, p.Probes = k, k
	slices.Sort(p.Members)
	return p
}

// AskAllCap is the most members a round of cohort m asks, in the
// one-process coordinator, when no eligible device is sure: 8 m, and at
// least 256, so that a class that opens with many idle ids (60 of them
// beside 10 pages) still has every page asked in its first round.
func AskAllCap(m int) int { return max(8*m, 256) }

// ProbesPerRound is how many devices that are no longer sampled a round
// of cohort m asks as probes: one for every 10 members, at least one.
func ProbesPerRound(m int) int { return max(1, (m+9)/10) }

// Askable is how many devices a round of cohort m can reach with
// eligible devices sampled and probeable ones no longer sampled: the
// eligible, plus the probes PlanCohort adds to a round that samples at
// least one; with none eligible, the probes of a recovery round
// (PlanRecovery). A shell that needs a number of devices before it starts
// a round (the coordinator's min-devices) counts these: counting only the
// eligible, a small class whose devices missed rounds would start no
// round, and those devices would never be asked again.
func Askable(eligible, probeable, m int) int {
	if eligible == 0 {
		return min(probeable, m)
	}
	return eligible + min(probeable, ProbesPerRound(m))
}

// Missed reports whether a cohort member missed the round: it did not
// deliver, and the round did not close at its target, or the member was
// not sure when asked. A sure member still out when the target was
// reached was only slower than the others: that is not a miss.
func Missed(delivered, atTarget, unsure bool) bool {
	return !delivered && (!atTarget || unsure)
}
