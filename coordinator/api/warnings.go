package api

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"browserfl/coordinator/shards"
)

// PlanInput is what PlanWarnings looks at: the session's plan, where it
// is, the devices that can still be asked, and the demo data handed out.
type PlanInput struct {
	// Rounds, Batch, Cohort are the session's T, b and m; MinDevices the
	// eligible devices a round needs.
	Rounds, Batch, Cohort, MinDevices int
	Committed                         int
	Finished                          bool
	// Active counts the connected devices that can be sampled now or
	// after their current round (not left, not stuck): the devices that
	// answer. Connected counts the connected ones that have not left,
	// the stuck ones too (0: not known, taken as Active).
	Active, Connected int
	// Shards is what the demo shard endpoint handed out (zero without
	// demo shards, or when the devices bring their own data).
	Shards shards.Stats
	// SamplesUsed is b times the updates included so far (each took b
	// fresh samples of its device).
	SamplesUsed int64
	// Lobby is true while the session waits for the teacher's Start:
	// Start sizes the plan to the class then, so nothing can be said of
	// it before.
	Lobby bool
	// LeftWhy counts the devices that left saying why, by what they said
	// (view.Activity.LeftWhy); the devices warning repeats it.
	LeftWhy map[string]int
}

// A Warning says why the class may not finish the planned rounds. Kind
// is stable ("devices", "shard", "data"); Text is for the teacher and
// the log (with the plan's symbols), Words the same in plain words for
// the projector.
type Warning struct {
	Kind  string
	Text  string
	Words string
}

// PlanWarnings returns why the class may not finish its planned rounds,
// in this order:
//
//   - devices: fewer active devices than MinDevices (rounds wait) or than
//     the cohort m (rounds run smaller, and every device is asked in every
//     round, so each needs a sample batch per round);
//   - shard: a page's shard cannot hold what the page will be asked for:
//     with A active devices a page is asked in about min(1, m/A) of the
//     L rounds left, which takes that many batches, more than the whole
//     training set if n < L min(1, m/A) b (shards are at most n);
//   - data: the demo data handed out, less what was used, is less than
//     the rest of the session needs, L x min(m, A) x b samples: the pages
//     run out around the round it covers. Shards of pages that have left
//     are still counted, so this is an optimistic bound: when it fires,
//     the class surely lacks data unless pages bring their own.
//
// A finished session, and one in its lobby (Start sizes the plan to
// the class), have no warnings. The function is pure.
func PlanWarnings(in PlanInput) []Warning {
	var out []Warning
	left := in.Rounds - in.Committed
	if in.Finished || in.Lobby || left <= 0 {
		return out
	}
	text, words := "", ""
	if why := leftWhy(in.LeftWhy); why != "" {
		text, words = "; "+why, " "+why+"."
	}
	connected := max(in.Connected, in.Active)
	switch {
	case in.Active < in.MinDevices && connected > in.Active:
		// Devices are there but do not answer (slow phones that missed
		// their last rounds): "connected" would read as "gone".
		out = append(out, Warning{"devices", fmt.Sprintf(
			"%d of %d connected devices answering: a round needs at least %d answering (min-devices), so the session waits; the others missed their last rounds and are asked again now and then%s",
			in.Active, connected, in.MinDevices, text), fmt.Sprintf(
			"Waiting for devices to answer: a round needs at least %d, and %d of the %d connected %s answering. The others are slow or busy and are asked again now and then.%s",
			in.MinDevices, in.Active, connected, isAre(in.Active), words)})
	case in.Active < in.MinDevices:
		out = append(out, Warning{"devices", fmt.Sprintf(
			"%d devices connected: a round needs at least %d (min-devices), so the session waits for more%s",
			in.Active, in.MinDevices, text), fmt.Sprintf(
			"Waiting for more devices: a round needs at least %d, and %s connected.%s", in.MinDevices, devicesAre(in.Active), words)})
	case in.Active < in.Cohort:
		out = append(out, Warning{"devices", fmt.Sprintf(
			"%d devices connected, fewer than the cohort m = %d: rounds run with %d, and every device is asked in every round%s",
			in.Active, in.Cohort, in.Active, text), fmt.Sprintf(
			"Only %s connected, fewer than the %d the lesson asks each round: every device now helps in every round.%s",
			devicesAre(in.Active), in.Cohort, words)})
	}
	if in.Batch <= 0 {
		return out
	}
	if n := in.Shards.TrainSamples; n > 0 {
		asked := left // rounds a page is asked in, about
		if in.Active > in.Cohort {
			asked = (left*in.Cohort + in.Active - 1) / in.Active
		}
		if int64(n) < int64(asked)*int64(in.Batch) {
			out = append(out, Warning{"shard", fmt.Sprintf(
				"a demo shard holds at most the %d training samples, %d rounds of b = %d, but a page may be asked in about %d of the %d rounds left: pages run out before the end (fewer rounds -T, a smaller batch -b, or more pages)",
				n, n/in.Batch, in.Batch, asked, left),
				"A device's example pictures may run out before the end of the lesson: more devices joining would help."})
		}
	}
	if in.Shards.HandedOut > 0 && in.Active > 0 {
		per := int64(min(in.Cohort, in.Active)) * int64(in.Batch) // samples a round takes
		have := max(in.Shards.Samples-in.SamplesUsed, 0)
		if have < int64(left)*per {
			covers := have / per
			out = append(out, Warning{"data", fmt.Sprintf(
				"the demo data handed out (%d shards; at most %d samples left) covers about %d of the %d rounds left at %d samples a round: pages run out around round %d, so more pages must join",
				in.Shards.HandedOut, have, covers, left, per, int64(in.Committed)+covers), fmt.Sprintf(
				"The example pictures handed out last about %d more of the %d rounds left: more devices must join to finish.", covers, left)})
		}
	}
	return out
}

// leftWhy says why devices left, most said first ("3 devices left: too
// few rows for one round: ...; 1 device left: ..."), or nothing.
func leftWhy(why map[string]int) string {
	if len(why) == 0 {
		return ""
	}
	reasons := slices.Collect(maps.Keys(why))
	slices.SortFunc(reasons, func(a, b string) int {
		if c := cmp.Compare(why[b], why[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	const shown = 3
	parts := make([]string, 0, shown)
	for _, r := range reasons[:min(shown, len(reasons))] {
		n := "1 device left"
		if why[r] != 1 {
			n = fmt.Sprintf("%d devices left", why[r])
		}
		parts = append(parts, n+": "+r)
	}
	switch more := len(reasons) - shown; {
	case more == 1:
		parts = append(parts, "1 more reason")
	case more > 1:
		parts = append(parts, fmt.Sprintf("%d more reasons", more))
	}
	return strings.Join(parts, "; ")
}

// devicesAre is "1 device is" or "n devices are".
// isAre is "is" for one and "are" for any other number.
func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func devicesAre(n int) string {
	if n == 1 {
		return "1 device is"
	}
	return fmt.Sprintf("%d devices are", n)
}

// planInput gathers PlanWarnings' input (shards may be nil): the plan is
// the session's current one (sized at Start), not the template.
func planInput(c Session, shards *shards.Set) PlanInput {
	a := c.Activity()
	sess := a.Session
	in := PlanInput{Rounds: sess.Rounds, Batch: sess.Batch, Cohort: sess.Cohort, MinDevices: a.MinDevices}
	in.Committed, in.Finished, in.Lobby, in.Active, in.Connected, in.LeftWhy = a.Committed, a.Finished, a.Lobby, a.Active, a.Connected, a.LeftWhy
	_, included := c.Front().Met.Totals()
	in.SamplesUsed = included * int64(sess.Batch)
	if shards != nil && sess.DemoShards {
		// A teacher's task brings no demo data: the host's shards are
		// another session's.
		in.Shards = shards.Stats()
	}
	return in
}

// Warnings returns the texts of PlanWarnings for the session now (the
// "warnings" of /api/status; never nil).
func Warnings(c Session, shards *shards.Set) []string {
	out := []string{}
	for _, w := range PlanWarnings(planInput(c, shards)) {
		out = append(out, w.Text)
	}
	return out
}

// LogWarnings checks PlanWarnings every interval until ctx ends and logs
// a warning when one of a kind appears, and when it clears.
func LogWarnings(ctx context.Context, c Session, shards *shards.Set, every time.Duration) {
	LogPlanWarnings(ctx, func() Session { return c }, shards, every)
}

// LogPlanWarnings is LogWarnings for whichever session
// current returns at each check (a Host's current one; a new session
// starts with no warning logged).
func LogPlanWarnings(ctx context.Context, current func() Session, shards *shards.Set, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	active := map[string]bool{}
	var last Session
	for {
		c := current()
		if c != last {
			active, last = map[string]bool{}, c
		}
		now := map[string]bool{}
		for _, w := range PlanWarnings(planInput(c, shards)) {
			now[w.Kind] = true
			if !active[w.Kind] {
				c.Front().Log.Warn("the class may not finish the planned rounds", "kind", w.Kind, "warning", w.Text)
			}
		}
		for k := range active {
			if !now[k] {
				c.Front().Log.Info("plan warning cleared", "kind", k)
			}
		}
		active = now
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
