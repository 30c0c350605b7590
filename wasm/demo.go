//go:build js && wasm

package main

import (
	"errors"
	"fmt"
	"time"

	"browserfl/shared/dataset"
	"browserfl/wasm/jsw"
	"browserfl/wasm/local"
	"browserfl/wasm/samples"
	"browserfl/wasm/ui"
)

// While the device trains, the rest of the page's demo shard comes in
// chunks (samples.NextChunk says when and how much; samples.FetchDemo
// fetches one): topUpDemo fetches them, addDemo gives each to the running
// device and stores it.

// demoRetryMax bounds the pause between failed fetches.
const demoRetryMax = time.Minute

// demoWanted returns the chunk of the demo shard the running device
// wants now (samples.NextChunk; the device holds demoHeld demo samples).
func (t *trainer) demoWanted() (from, count int, ok, coming bool) {
	rt := t.runtime()
	if rt == nil {
		return 0, 0, false, t.moreDemo.Load()
	}
	have, total := t.a.lib.DemoSize()
	st := rt.State()
	b := t.a.params.Batch
	if st.Session != nil {
		b = st.Session.Batch
	}
	return samples.NextChunk(have, total, int(t.demoHeld.Load()), st.Cursor, b)
}

// addDemo gives chunk s to the running device, then stores it after the
// demo source: a chunk the device refuses is not stored, and one that
// could not be stored is still trained on in this run (a reload then
// finds fewer samples than the cursor passed: none is used twice).
func (t *trainer) addDemo(s dataset.Set, total int) error {
	rt := t.runtime()
	// The wrapper's count first: it never refuses what the runtime has.
	t.samples.Add(int64(s.Len()))
	prev, _ := t.a.lib.Source(samples.Demo)
	if err := rt.InsertData(prev.Len(), s.Samples); err != nil {
		t.samples.Add(-int64(s.Len()))
		return err
	}
	t.demoHeld.Add(int64(s.Len()))
	return t.a.lib.SaveDemo(t.a.ctx, local.Join(samples.Demo, prev, s), total)
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
		case <-t.ran:
			return
		case <-time.After(pause):
		}
		from, count, ok, coming := t.demoWanted()
		t.moreDemo.Store(coming)
		if !ok {
			pause = poll
			continue
		}
		s, total, err := samples.FetchDemo(t.ctx, t.a.base, t.a.code, from, count)
		if errors.Is(err, samples.ErrDemoComplete) {
			if err := t.a.lib.DemoComplete(t.ctx, total); err != nil {
				jsw.Global().Get("console").Call("debug", "browserfl: example pictures: "+err.Error())
			}
			continue
		}
		if _, was := t.a.lib.DemoSize(); err == nil && total != was {
			// Not the shard the page started on (a coordinator that lost
			// its record of the shards): never mix two shards.
			jsw.Global().Get("console").Call("warn", fmt.Sprintf("browserfl: the example pictures' shard changed (%d samples, was %d): keeping those stored", total, was))
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
