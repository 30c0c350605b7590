//go:build js && wasm

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"browserfl/shared/dataset"
	"browserfl/wasm/jsw"
	"browserfl/wasm/local"
	"browserfl/wasm/ui"
)

// The example pictures arrive in chunks of the page's demo shard
// (/api/demo/images?from=&count=, coordinator/shards.ParseRange): the
// first demoFirstRounds rounds' worth before the lobby, then, while the
// device trains, demoChunkRounds more whenever fewer than demoAheadRounds
// rounds of unused samples are left. The margin is wide: in a class
// every page runs out at the same round, rounds can come every 0.6 s,
// and a fetch on a loaded machine can take seconds (a margin of 8 rounds
// ran every page of a CI lesson dry at round 33). Should the samples
// still run out, the device waits for them (device.Config.MoreData,
// moreDemo) and does not leave. A student who helps for ten rounds
// downloads 48 rounds' worth (the first chunk and one more), about a
// quarter of the default lesson's shard; the first chunk is what the
// join weight (e2e TestJoinWeight) counts.
//
// A chunk goes at the end of the demo source, which all() puts first,
// and at the same place in the running device's data
// (device.Runtime.InsertData), before the owner's files and drawings,
// only while the cursor has not passed the demo samples: the samples
// used keep their places, before and after a reload (drawings stored
// meanwhile were never given to this device and come after). The shard's samples are in random order (dataset.
// ShardStream.Next), so any chunk is drawn from the shard's label
// proportions: a signal-bound session's nearly iid shards stay so.
const (
	demoFirstRounds = 12
	demoChunkRounds = 32
	demoAheadRounds = 32
	// demoBatch stands for the batch when the session does not say it.
	demoBatch = 32
	// keyDemoTotal holds the demo shard's size (decimal), so a reload
	// knows whether more is to come.
	keyDemoTotal = keyData + "demo/total"
	// demoRetryMax bounds the pause between failed fetches.
	demoRetryMax = time.Minute
)

// demoSamples returns the samples of rounds rounds at batch b.
func demoSamples(rounds, b int) int {
	if b <= 0 {
		b = demoBatch
	}
	return rounds * b
}

// errDemoComplete is returned by fetchDemo when the shard has no samples
// from there (416): the page has all of it.
var errDemoComplete = errors.New("the example pictures are all here")

// fetchDemo fetches samples from..from+count of the page's demo shard,
// shuffled (shuffle), and the shard's size.
func (a *app) fetchDemo(ctx context.Context, from, count int) (dataset.Set, int, error) {
	q := fmt.Sprintf("?code=%s&from=%d&count=%d", url.QueryEscape(a.code), from, count)
	im, size, err := jsw.FetchHeader(ctx, a.base+"/api/demo/images"+q, "X-Shard-Samples")
	if he := (*jsw.HTTPError)(nil); errors.As(err, &he) && he.Status == http.StatusRequestedRangeNotSatisfiable {
		return dataset.Set{}, from, errDemoComplete
	}
	if err != nil {
		return dataset.Set{}, 0, err
	}
	lab, err := jsw.Fetch(ctx, a.base+"/api/demo/labels"+q)
	if err != nil {
		return dataset.Set{}, 0, err
	}
	s, err := local.Decode("demo", im, lab)
	if err != nil {
		return dataset.Set{}, 0, err
	}
	total, err := strconv.Atoi(size)
	if err != nil || total < from+s.Len() || s.Len() == 0 || s.Len() > count {
		return dataset.Set{}, 0, fmt.Errorf("example pictures: %d from %d (asked %d) of a shard of %q", s.Len(), from, count, size)
	}
	if err := shuffle(s); err != nil {
		return dataset.Set{}, 0, err
	}
	return s, total, nil
}

// saveDemo stores the demo source s and the shard's size total in one
// transaction, and publishes them.
func (a *app) saveDemo(s dataset.Set, total int) error {
	im, lab, err := local.Encode(s)
	if err != nil {
		return err
	}
	if err := a.store.Put(a.ctx, map[string][]byte{
		keyData + "demo/images": im,
		keyData + "demo/labels": lab,
		keyDemoTotal:            []byte(strconv.Itoa(total)),
	}); err != nil {
		return err
	}
	a.setsMu.Lock()
	a.sets["demo"] = s
	a.demoTotal = total
	a.setsMu.Unlock()
	a.publishData()
	return nil
}

// loadDemoTotal reads the demo shard's size after a reload; a demo
// source stored without it (whole, by an earlier page) is complete.
func (a *app) loadDemoTotal() {
	b, err := a.store.Get(a.ctx, keyDemoTotal)
	a.setsMu.Lock()
	defer a.setsMu.Unlock()
	a.demoTotal = len(a.sets["demo"].Samples)
	if n, perr := strconv.Atoi(string(b)); err == nil && perr == nil && n > a.demoTotal {
		a.demoTotal = n
	}
}

// firstDemo fetches and stores the first chunk of the demo shard
// (LoadDemo).
func (a *app) firstDemo() error {
	s, total, err := a.fetchDemo(a.ctx, 0, demoSamples(demoFirstRounds, a.params.Batch))
	if err != nil {
		return err
	}
	return a.saveDemo(s, total)
}

// demoWanted returns the chunk of the demo shard the running device
// wants now: ok when more can come (coming: the device holds the whole
// demo source first in its data, demoHeld, and the shard has more) and
// fewer than demoAheadRounds rounds of its samples are unused.
func (t *trainer) demoWanted() (from, count int, ok, coming bool) {
	rt := t.runtime()
	if rt == nil {
		return 0, 0, false, t.moreDemo.Load()
	}
	a := t.a
	a.setsMu.Lock()
	have, total := len(a.sets["demo"].Samples), a.demoTotal
	a.setsMu.Unlock()
	st := rt.State()
	b := a.params.Batch
	if st.Session != nil {
		b = st.Session.Batch
	}
	coming = have > 0 && have < total && int(t.demoHeld.Load()) == have && st.Cursor <= have
	if !coming || have-st.Cursor >= demoSamples(demoAheadRounds, b) {
		return 0, 0, false, coming
	}
	return have, min(demoSamples(demoChunkRounds, b), total-have), true, true
}

// addDemo gives chunk s to the running device, then stores it after the
// demo source: a chunk the device refuses is not stored, and one that
// could not be stored is still trained on in this run (a reload then
// finds fewer samples than the cursor passed: none is used twice).
func (t *trainer) addDemo(s dataset.Set, total int) error {
	rt := t.runtime()
	// The wrapper's count first: it never refuses what the runtime has.
	t.samples.Add(int64(s.Len()))
	prev, _ := t.a.source("demo")
	if err := rt.InsertData(prev.Len(), s.Samples); err != nil {
		t.samples.Add(-int64(s.Len()))
		return err
	}
	t.demoHeld.Add(int64(s.Len()))
	return t.a.saveDemo(local.Join("demo", prev, s), total)
}

// topUpDemo fetches the rest of the demo shard while the device trains
// (demoWanted), retrying a failed fetch with a growing pause, and says
// so in plain words; the device meanwhile trains on what it has, and
// leaves as always if that runs out.
func (t *trainer) topUpDemo() {
	// Whatever ends the loop, no more samples come: a device waiting
	// for them leaves as done at its next round.
	defer t.moreDemo.Store(false)
	const poll = 2 * time.Second
	pause, retry := poll, poll
	say := func(words string) { t.a.update(func(s *ui.State) { s.Train.More = words }) }
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-t.done:
			return
		case <-time.After(pause):
		}
		from, count, ok, coming := t.demoWanted()
		t.moreDemo.Store(coming)
		if !ok {
			pause = poll
			continue
		}
		s, total, err := t.a.fetchDemo(t.ctx, from, count)
		if errors.Is(err, errDemoComplete) {
			t.a.setsMu.Lock()
			t.a.demoTotal = total
			t.a.setsMu.Unlock()
			if err := t.a.store.Put(t.ctx, map[string][]byte{keyDemoTotal: []byte(strconv.Itoa(total))}); err != nil {
				jsw.Global().Get("console").Call("debug", "browserfl: example pictures: "+err.Error())
			}
			continue
		}
		t.a.setsMu.Lock()
		other := err == nil && total != t.a.demoTotal
		t.a.setsMu.Unlock()
		if other {
			// Not the shard the page started on (a coordinator that lost
			// its record of the shards): never mix two shards.
			jsw.Global().Get("console").Call("warn", fmt.Sprintf("browserfl: the example pictures' shard changed (%d samples, was %d): keeping those stored", total, t.a.demoTotal))
			return
		}
		if err == nil {
			err = t.addDemo(s, total)
			if err != nil {
				say("")
				jsw.Global().Get("console").Call("warn", "browserfl: more example pictures: "+err.Error())
				return
			}
			say("")
			pause, retry = poll, poll
			continue
		}
		if t.ctx.Err() != nil {
			return
		}
		jsw.Global().Get("console").Call("debug", "browserfl: more example pictures: "+err.Error())
		say(fmt.Sprintf("Could not get more example pictures just now. Trying again in %d seconds; this page keeps helping with the ones it has.", int(retry/time.Second)))
		pause, retry = retry, min(2*retry, demoRetryMax)
	}
}
