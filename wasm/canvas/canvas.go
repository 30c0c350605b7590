//go:build js && wasm

package canvas

import (
	"errors"
	"syscall/js"

	"browserfl/wasm/jsw"
	"browserfl/wasm/local"
)

// SentPictures draws the two pictures of "what your phone sent" when
// they change or their canvases are new.
type SentPictures struct {
	clean, noisy js.Value
	round        int
	small        js.Value // a Side x Side canvas outside the page (paint)
}

// Draw draws the pictures clean and noisy of the update of round on the
// canvases with ids cleanID and noisyID (Side x Side grey levels each),
// unless they show them already.
func (sp *SentPictures) Draw(cleanID, noisyID string, round int, clean, noisy []byte) {
	c, _ := jsw.ByID(cleanID)
	n, _ := jsw.ByID(noisyID)
	if !c.Truthy() || !n.Truthy() {
		sp.clean, sp.noisy = js.Undefined(), js.Undefined()
		return
	}
	if round == sp.round && sp.clean.Truthy() && sp.clean.Equal(c) && sp.noisy.Equal(n) {
		return
	}
	sp.clean, sp.noisy, sp.round = c, n, round
	if !sp.small.Truthy() {
		sp.small = js.Global().Get("document").Call("createElement", "canvas")
		sp.small.Set("width", local.Side)
		sp.small.Set("height", local.Side)
	}
	paint(c, sp.small, clean)
	paint(n, sp.small, noisy)
}

// paint draws Side x Side grey levels on a canvas's default bitmap (see
// Pad.Clear for why the canvases keep it): the levels go to the browser
// in one copy, as the pixels of small, a Side x Side canvas outside the
// page, which is drawn scaled up without smoothing, each level a sharp
// cell. (A rectangle per value cost 1,568 calls into JavaScript and as
// many colour strings a round, about a quarter of the page's
// main-thread work: docs/browser.md, "Responsiveness".)
func paint(el, small js.Value, grey []byte) {
	if len(grey) != local.Features {
		return
	}
	rgba := make([]byte, 4*len(grey))
	for i, g := range grey {
		rgba[4*i], rgba[4*i+1], rgba[4*i+2], rgba[4*i+3] = g, g, g, 255
	}
	buf := js.Global().Get("Uint8Array").New(len(rgba))
	js.CopyBytesToJS(buf, rgba)
	pixels := js.Global().Get("Uint8ClampedArray").New(buf.Get("buffer"))
	small.Call("getContext", "2d").Call("putImageData", js.Global().Get("ImageData").New(pixels, local.Side, local.Side), 0, 0)
	ctx := el.Call("getContext", "2d")
	ctx.Call("setTransform", 1, 0, 0, 1, 0, 0)
	ctx.Set("imageSmoothingEnabled", false)
	ctx.Call("drawImage", small, 0, 0, el.Get("width"), el.Get("height"))
}

// Pad is a 28x28 drawing surface, scaled up by CSS, drawn on with
// pointer events handled directly in syscall/js. Its zero value is
// bound to no canvas (Attach binds it).
type Pad struct {
	el      js.Value
	release []func()
	down    bool
	fresh   bool // the next stroke starts a new drawing (the model answered the last)
}

// Attach (re)binds c to the element with id if the page now shows a
// different element (vugu re-creates elements when screens change).
func (c *Pad) Attach(id string) {
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
	c.Clear()
	// Coordinates are logical 28x28 pixels; Clear scales the context
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
			if c.fresh {
				c.fresh = false
				c.Clear()
			}
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

// StartAfresh makes the next stroke start a new drawing (the drawing
// stays until then, beside what it was used for).
func (c *Pad) StartAfresh() { c.fresh = true }

func (c *Pad) detach() {
	for _, r := range c.release {
		r()
	}
	c.release = nil
	c.el = js.Undefined()
}

// Clear paints the canvas black and sets a white round pen, drawing in
// logical 28x28 coordinates scaled to the canvas bitmap. The canvas has
// no width or height attribute: vugu re-sets the attributes it renders
// on every render, and setting a canvas's size resets its bitmap and
// pen, so the page keeps the default bitmap (300x150) and scales.
func (c *Pad) Clear() {
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

// Features reads the canvas pixels as a sample's features.
func (c *Pad) Features() ([]float32, error) {
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
