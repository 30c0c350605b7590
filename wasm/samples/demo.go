//go:build js && wasm

package samples

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"browserfl/shared/dataset"
	"browserfl/wasm/jsw"
	"browserfl/wasm/local"
)

// The example pictures arrive in chunks of the page's demo shard
// (/api/demo/images?from=&count=, coordinator/shards.ParseRange): the
// first demoFirstRounds rounds' worth before the lobby (FirstChunk),
// then, while the device trains, demoChunkRounds more whenever fewer
// than demoAheadRounds rounds of unused samples are left (NextChunk).
// The margin is wide: in a class every page runs out at the same round,
// rounds can come every 0.6 s, and a fetch on a loaded machine can take
// seconds (a margin of 8 rounds ran every page of a CI lesson dry at
// round 33). Should the samples still run out, the device waits for them
// (device.Config.MoreData) and does not leave. A student who helps for
// ten rounds downloads 48 rounds' worth (the first chunk and one more),
// about a quarter of the default lesson's shard; the first chunk is what
// the join weight (e2e TestJoinWeight) counts.
//
// A chunk goes at the end of the demo source, which All puts first, and
// at the same place in the running device's data
// (device.Runtime.InsertData), before the owner's files and drawings,
// only while the cursor has not passed the demo samples: the samples
// used keep their places, before and after a reload (drawings stored
// meanwhile were never given to this device and come after). The
// shard's samples are in random order (dataset.ShardStream.Next), so any
// chunk is drawn from the shard's label proportions: a signal-bound
// session's nearly iid shards stay so.
const (
	demoFirstRounds = 12
	demoChunkRounds = 32
	demoAheadRounds = 32
	// demoBatch stands for the batch when the session does not say it.
	demoBatch = 32
)

// demoSamples returns the samples of rounds rounds at batch b.
func demoSamples(rounds, b int) int {
	if b <= 0 {
		b = demoBatch
	}
	return rounds * b
}

// FirstChunk returns the size of the first chunk of the demo shard, for
// a session of batch b.
func FirstChunk(b int) int { return demoSamples(demoFirstRounds, b) }

// NextChunk returns the chunk of the demo shard a running device wants
// now (from, count): ok when more can come (coming: the device holds the
// whole demo source first in its data, held of the have samples
// stored, and the shard's total has more) and fewer than
// demoAheadRounds rounds of batch b are unused past the device's
// cursor.
func NextChunk(have, total, held, cursor, b int) (from, count int, ok, coming bool) {
	coming = have > 0 && have < total && held == have && cursor <= have
	if !coming || have-cursor >= demoSamples(demoAheadRounds, b) {
		return 0, 0, false, coming
	}
	return have, min(demoSamples(demoChunkRounds, b), total-have), true, true
}

// ErrDemoComplete is returned by FetchDemo when the shard has no samples
// from there (416): the page has all of it.
var ErrDemoComplete = errors.New("the example pictures are all here")

// FetchDemo fetches samples from..from+count of the demo shard of the
// session code at the coordinator base, shuffled (Shuffle), and the
// shard's size.
func FetchDemo(ctx context.Context, base, code string, from, count int) (dataset.Set, int, error) {
	q := fmt.Sprintf("?code=%s&from=%d&count=%d", url.QueryEscape(code), from, count)
	im, size, err := jsw.FetchHeader(ctx, base+"/api/demo/images"+q, "X-Shard-Samples")
	if he := (*jsw.HTTPError)(nil); errors.As(err, &he) && he.Status == jsw.StatusRangeNotSatisfiable {
		return dataset.Set{}, from, ErrDemoComplete
	}
	if err != nil {
		return dataset.Set{}, 0, err
	}
	lab, err := jsw.Fetch(ctx, base+"/api/demo/labels"+q)
	if err != nil {
		return dataset.Set{}, 0, err
	}
	s, err := local.Decode(Demo, im, lab)
	if err != nil {
		return dataset.Set{}, 0, err
	}
	total, err := strconv.Atoi(size)
	if err != nil || total < from+s.Len() || s.Len() == 0 || s.Len() > count {
		return dataset.Set{}, 0, fmt.Errorf("example pictures: %d from %d (asked %d) of a shard of %q", s.Len(), from, count, size)
	}
	if err := Shuffle(s); err != nil {
		return dataset.Set{}, 0, err
	}
	return s, total, nil
}
