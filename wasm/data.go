//go:build js && wasm

package main

import (
	"crypto/rand"
	"fmt"
	"strings"
	"syscall/js"

	"browserfl/shared/dataset"
	"browserfl/wasm/jsw"
	"browserfl/wasm/local"
	"browserfl/wasm/ui"
)

// loadData reads every stored source from IndexedDB.
func (a *app) loadData() error {
	keys, err := a.store.Keys(a.ctx, keyData)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if src, ok := strings.CutSuffix(strings.TrimPrefix(k, keyData), "/rows"); ok && a.task != nil {
			b, err := a.store.Get(a.ctx, k)
			if err == nil {
				err = a.loadRows(src, b)
			}
			if err != nil {
				return fmt.Errorf("%s rows: %w", src, err)
			}
			continue
		}
		if !strings.HasSuffix(k, "/images") {
			continue
		}
		src := strings.TrimSuffix(strings.TrimPrefix(k, keyData), "/images")
		im, err := a.store.Get(a.ctx, k)
		if err != nil {
			return err
		}
		lab, err := a.store.Get(a.ctx, keyData+src+"/labels")
		if err != nil {
			return fmt.Errorf("%s labels: %w", src, err)
		}
		s, err := local.Decode(src, im, lab)
		if err != nil {
			return err
		}
		a.setSource(src, s)
	}
	a.loadDemoTotal()
	a.publishData()
	return nil
}

// shuffle permutes a new source once, with a seed from crypto/rand,
// before it is stored (see local.Shuffle).
func shuffle(s dataset.Set) error {
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return fmt.Errorf("shuffle seed: %w", err)
	}
	local.Shuffle(s, seed)
	return nil
}

// save stores source src (replacing what was there) and publishes it.
func (a *app) save(src string, s dataset.Set) error {
	im, lab, err := local.Encode(s)
	if err != nil {
		return err
	}
	if err := a.store.Put(a.ctx, map[string][]byte{
		keyData + src + "/images": im,
		keyData + src + "/labels": lab,
	}); err != nil {
		return err
	}
	a.setSource(src, s)
	a.publishData()
	return nil
}

// LoadDemo fetches the first chunk of the demo shard and keeps it
// (ui.Controller.LoadDemo; demo.go).
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
		if _, have := a.source("demo"); have {
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
		if err := a.firstDemo(); err != nil {
			a.update(func(s *ui.State) { s.Data.Busy = "" })
			a.fail("Demo data", err)
		}
	}()
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
		s, ok := a.source("drawn")
		if !ok {
			s = local.Empty("drawn")
		}
		s.Samples = append(append([]dataset.Sample(nil), s.Samples...), dataset.Sample{X: x, Label: label})
		if err := a.save("drawn", s); err != nil {
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
		if err := shuffle(res.Set); err != nil {
			a.fail("Files", err)
			return
		}
		prev, _ := a.source("files")
		s := local.Join("files", prev, res.Set)
		if err := a.save("files", s); err != nil {
			a.fail("Saving files", err)
		}
	}()
}
