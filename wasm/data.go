//go:build js && wasm

package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"syscall/js"

	"github.com/vugu/vugu"

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

// LoadDemo implements ui.Controller: fetch the demo shard once and keep it.
func (a *app) LoadDemo() {
	if a.state.Data.Used > 0 {
		a.state.Error = "Some pictures are already used: only drawings can be added now."
		return
	}
	if _, ok := a.source("demo"); ok {
		a.state.Error = "The example pictures are already stored here."
		return
	}
	a.state.Data.Busy = "Getting the example pictures…"
	go func() {
		q := "?code=" + url.QueryEscape(a.code)
		im, err := jsw.Fetch(a.ctx, a.base+"/api/demo/images"+q)
		if err == nil {
			var lab []byte
			lab, err = jsw.Fetch(a.ctx, a.base+"/api/demo/labels"+q)
			if err == nil {
				var s dataset.Set
				s, err = local.Decode("demo", im, lab)
				if err == nil {
					err = shuffle(s)
				}
				if err == nil {
					err = a.save("demo", s)
				}
			}
		}
		if err != nil {
			a.update(func(s *ui.State) { s.Data.Busy = "" })
			a.fail("Demo data", err)
		}
	}()
}

// AddDrawing implements ui.Controller.
func (a *app) AddDrawing(label int) {
	x, err := a.draw.features()
	if err != nil {
		a.state.Data.DrawHint = "Drawing: " + err.Error()
		return
	}
	if local.Blank(x) {
		a.state.Data.DrawHint = "Draw something first, then add it."
		return
	}
	a.state.Data.DrawHint = ""
	a.draw.clear()
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

// ClearDrawing implements ui.Controller.
func (a *app) ClearDrawing() { a.draw.clear() }

// FilesPicked implements ui.Controller.
func (a *app) FilesPicked(ev vugu.DOMEvent) {
	if a.state.Data.Used > 0 {
		a.state.Error = "Some pictures are already used: only drawings can be added now."
		return
	}
	list := js.Value(ev.JSEventTarget()).Get("files")
	if list.IsUndefined() || list.IsNull() || list.Length() == 0 {
		return
	}
	type pick struct {
		name string
		file js.Value
	}
	var picks []pick
	for i := 0; i < list.Length(); i++ {
		f := list.Index(i)
		picks = append(picks, pick{f.Get("name").String(), f})
	}
	a.state.Data.Busy = fmt.Sprintf("Reading %d file(s) in the page…", len(picks))
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

// canvas is a 28x28 drawing surface, scaled up by CSS, drawn on with
// pointer events handled directly in syscall/js.
type canvas struct {
	el      js.Value
	release []func()
	down    bool
}

// attach (re)binds c to the element with id if the page now shows a
// different element (vugu re-creates elements when screens change).
func (c *canvas) attach(id string) {
	el, err := jsw.ByID(id)
	if err != nil {
		c.detach()
		return
	}
	if c.el.Truthy() && c.el.Equal(el) {
		return
	}
	c.detach()
	c.el = el
	c.clear()
	// Coordinates are logical 28x28 pixels; clear() scales the context
	// from them to the canvas bitmap.
	pos := func(ev js.Value) (float64, float64) {
		r := el.Call("getBoundingClientRect")
		w, h := r.Get("width").Float(), r.Get("height").Float()
		if w == 0 || h == 0 {
			return 0, 0
		}
		return (ev.Get("clientX").Float() - r.Get("left").Float()) * local.Side / w,
			(ev.Get("clientY").Float() - r.Get("top").Float()) * local.Side / h
	}
	ctx := el.Call("getContext", "2d")
	c.release = append(c.release,
		jsw.Listen(el, "pointerdown", func(ev js.Value) {
			ev.Call("preventDefault")
			c.down = true
			x, y := pos(ev)
			ctx.Call("beginPath")
			ctx.Call("moveTo", x, y)
			ctx.Call("lineTo", x+0.01, y)
			ctx.Call("stroke")
		}),
		jsw.Listen(el, "pointermove", func(ev js.Value) {
			if !c.down {
				return
			}
			x, y := pos(ev)
			ctx.Call("lineTo", x, y)
			ctx.Call("stroke")
		}),
		jsw.Listen(el, "pointerup", func(js.Value) { c.down = false }),
		jsw.Listen(el, "pointerleave", func(js.Value) { c.down = false }),
	)
}

func (c *canvas) detach() {
	for _, r := range c.release {
		r()
	}
	c.release = nil
	c.el = js.Undefined()
}

// clear paints the canvas black and sets a white round pen, drawing in
// logical 28x28 coordinates scaled to the canvas bitmap. The canvas has
// no width or height attribute: vugu re-sets the attributes it renders
// on every render, and setting a canvas's size resets its bitmap and
// pen, so the page keeps the default bitmap (300x150) and scales.
func (c *canvas) clear() {
	if !c.el.Truthy() {
		return
	}
	ctx := c.el.Call("getContext", "2d")
	w, h := c.el.Get("width").Float(), c.el.Get("height").Float()
	ctx.Call("setTransform", w/local.Side, 0, 0, h/local.Side, 0, 0)
	ctx.Set("fillStyle", "#000")
	ctx.Call("fillRect", 0, 0, local.Side, local.Side)
	ctx.Set("strokeStyle", "#fff")
	ctx.Set("lineWidth", 2.2)
	ctx.Set("lineCap", "round")
	ctx.Set("lineJoin", "round")
}

// features reads the canvas pixels as a sample's features.
func (c *canvas) features() ([]float32, error) {
	if !c.el.Truthy() {
		return nil, errors.New("no canvas on this screen")
	}
	w, h := c.el.Get("width").Int(), c.el.Get("height").Int()
	img, err := jsw.Call(c.el.Call("getContext", "2d"), "getImageData", 0, 0, w, h)
	if err != nil {
		return nil, err
	}
	b, err := jsw.Bytes(img.Get("data"))
	if err != nil {
		return nil, err
	}
	return local.FromRGBA(b, w, h)
}

// afterRender binds the canvases of the current screen.
func (a *app) afterRender() {
	a.draw.attach("draw")
	a.try.attach("try")
}
