//go:build js && wasm

package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall/js"
	"time"

	"browserfl/shared/dataset"
	"browserfl/wasm/jsw"
	"browserfl/wasm/local"
	"browserfl/wasm/samples"
	"browserfl/wasm/ui"
)

// The student's actions on the data screen: each adds to the session's
// data library (wasm/samples, app.lib), which is shown on every change
// (publishData).

// publishData shows the library's samples on the data screen.
func (a *app) publishData() {
	all := a.lib.All()
	n := a.lib.Sizes()
	a.update(func(s *ui.State) {
		s.Data.Count = len(all.Samples)
		s.Data.PerLabel = local.Counts(all)
		s.Data.Sources = local.SortedSources(n)
		s.Data.Busy = ""
	})
}

// LoadDemo fetches the first chunk of the demo shard and keeps it
// (ui.Controller.LoadDemo; samples.FirstChunk).
func (a *app) LoadDemo() {
	if a.store == nil {
		return
	}
	ok := false
	things := "pictures"
	if a.task != nil {
		things = "rows"
	}
	a.update(func(s *ui.State) {
		if s.Data.Used > 0 {
			s.Error = s.Session.UsedNotice()
			return
		}
		if _, have := a.lib.Source(samples.Demo); have {
			s.Error = "The example " + things + " are already stored here."
			return
		}
		s.Data.Busy = "Getting the example " + things + "…"
		ok = true
	})
	if !ok {
		return
	}
	if a.task != nil {
		a.loadDemoRows()
		return
	}
	go func() {
		// The first rounds' pictures; the rest comes while the device
		// trains (topUpDemo).
		var s dataset.Set
		var total int
		err := a.whileBusy(func() (err error) {
			s, total, err = samples.FetchDemo(a.ctx, a.base, a.code, 0, samples.FirstChunk(a.params.Batch))
			return err
		})
		if err == nil {
			err = a.lib.SaveDemo(a.ctx, s, total)
		}
		if err != nil {
			a.update(func(s *ui.State) { s.Data.Busy = "" })
			a.fail("Demo data", err)
		}
	}()
}

// whileBusy runs fetch until it is not refused as too many requests
// (429: a class behind one address asked for more new shards at once
// than the server deals), saying so on the data screen and waiting 1 to
// 3 s between tries; it gives up after two minutes.
func (a *app) whileBusy(fetch func() error) error {
	end := time.Now().Add(2 * time.Minute)
	for {
		err := fetch()
		var he *jsw.HTTPError
		if !errors.As(err, &he) || he.Status != jsw.StatusTooManyRequests || time.Now().After(end) {
			return err
		}
		a.update(func(s *ui.State) { s.Data.Busy = "Many classmates are asking at once: trying again in a moment…" })
		select {
		case <-a.ctx.Done():
			return a.ctx.Err()
		case <-time.After(time.Second + rand.N(2*time.Second)):
		}
	}
}

// AddDrawing stores a drawing (features x, read from the page's canvas
// by the page) as a sample with label (ui.Controller.AddDrawing; the
// page has checked that the drawing is not blank).
func (a *app) AddDrawing(x []float32, label int) {
	if a.store == nil {
		return
	}
	if local.Blank(x) {
		a.update(func(s *ui.State) { s.Data.DrawHint = "Draw something first, then add it." })
		return
	}
	go func() {
		s, ok := a.lib.Source(samples.Drawn)
		if !ok {
			s = local.Empty(samples.Drawn)
		}
		s.Samples = append(append([]dataset.Sample(nil), s.Samples...), dataset.Sample{X: x, Label: label})
		if err := a.lib.Save(a.ctx, samples.Drawn, s); err != nil {
			a.fail("Saving the drawing", err)
		}
	}()
}

// FilesPicked reads the files the student picked (File objects the page
// sent beside the message; ui.Controller.FilesPicked).
func (a *app) FilesPicked(list js.Value) {
	if a.store == nil || list.Type() != js.TypeObject || list.Length() == 0 {
		return
	}
	type pick struct {
		name string
		file js.Value
	}
	var picks []pick
	for i := 0; i < list.Length(); i++ {
		f := list.Index(i)
		if !f.InstanceOf(js.Global().Get("Blob")) || f.Get("name").Type() != js.TypeString {
			js.Global().Get("console").Call("warn", "browserfl worker: a picked file that is not a File: ignored")
			continue
		}
		picks = append(picks, pick{f.Get("name").String(), f})
	}
	if len(picks) == 0 {
		return
	}
	ok := false
	a.update(func(s *ui.State) {
		if s.Data.Used > 0 {
			s.Error = s.Session.UsedNotice()
			return
		}
		s.Data.Busy = fmt.Sprintf("Reading %d file(s) in the page…", len(picks))
		ok = true
	})
	if !ok {
		return
	}
	go func() {
		var files []local.File
		for _, p := range picks {
			buf, err := jsw.Await(a.ctx, p.file.Call("arrayBuffer"))
			if err != nil {
				a.fail("Reading "+p.name, err)
				return
			}
			b, err := jsw.Bytes(buf)
			if err != nil {
				a.fail("Reading "+p.name, err)
				return
			}
			files = append(files, local.File{Name: p.name, Data: b})
		}
		if a.task != nil {
			a.addCSV(files)
			return
		}
		res, err := local.Parse(files)
		if err != nil {
			a.update(func(s *ui.State) { s.Data.Busy = "" })
			a.fail("Files", err)
			return
		}
		if err := samples.Shuffle(res.Set); err != nil {
			a.fail("Files", err)
			return
		}
		prev, _ := a.lib.Source(samples.Files)
		s := local.Join(samples.Files, prev, res.Set)
		if err := a.lib.Save(a.ctx, samples.Files, s); err != nil {
			a.fail("Saving files", err)
		}
	}()
}
