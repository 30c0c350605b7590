//go:build js && wasm

package main

import (
	"errors"
	"fmt"
	"net/url"
	"syscall/js"

	"github.com/vugu/vugu"

	"browserfl/wasm/bridge"
	"browserfl/wasm/canvas"
	"browserfl/wasm/jsw"
	"browserfl/wasm/local"
	"browserfl/wasm/ui"
)

// workerURL is the page's dedicated worker (web/worker.js), which runs
// this same program as the device half (runWorker).
const workerURL = "/web/worker.js"

// page is the half of the program on the page's main thread: it renders
// the state the worker sends, draws on the canvases and forwards the
// student's actions to the worker. It implements ui.Controller; its
// methods are called with the vugu event lock held, which also guards
// every field below.
type page struct {
	ee    vugu.EventEnv
	state *ui.State // what the page renders
	// known is the worker's state as this page knows it: every patch
	// received applied, and the page-written fields it has sent.
	known  ui.State
	worker js.Value
	ready  bool       // the worker listens
	queue  []outMsg   // messages waiting for ready
	draw   canvas.Pad // the drawing to add as a sample
	try    canvas.Pad // the drawing to ask the model about
	in     *inbox     // the worker's messages, handled in order by receive
	perfAt float64    // the page's performance.timeOrigin
	// screen is the screen last rendered: a new one opens at its top.
	screen ui.Screen
	// shownError and dataCount are the error and the stored samples last
	// rendered: a new error, shown at the top, and on the data screen a
	// batch of samples stored at once (example pictures, files) scroll
	// the page to its top, where the message, the count and "Start
	// helping" are.
	shownError string
	dataCount  int
	// pics are the two pictures of "what your phone sent" as last drawn.
	pics canvas.SentPictures
}

// outMsg is one message to the worker: its JSON text and, for a file
// pick, the File objects.
type outMsg struct {
	text  string
	files js.Value
}

func newPage(ee vugu.EventEnv) *page {
	return &page{
		ee:     ee,
		state:  &ui.State{Screen: ui.ScreenLoading},
		known:  ui.State{Screen: ui.ScreenLoading},
		in:     &inbox{wake: make(chan struct{}, 1)},
		perfAt: js.Global().Get("performance").Get("timeOrigin").Float(),
	}
}

// startWorker creates the worker and asks it to start with the page's
// join code (sent once the worker says it listens).
func (p *page) startWorker() error {
	// web/app.js starts it, and relays its websocket (see there).
	w, err := jsw.Try(func() js.Value { return js.Global().Call("flStartWorker", workerURL) })
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	p.worker = w
	jsw.Listen(w, "message", func(ev js.Value) { p.in.push(ev.Get("data")) })
	jsw.Listen(w, "messageerror", func(js.Value) {
		js.Global().Get("console").Call("warn", "browserfl: a message from the worker could not be read")
	})
	jsw.Listen(w, "error", func(ev js.Value) {
		ev.Call("preventDefault")
		msg := "unknown error"
		if m := ev.Get("message"); m.Type() == js.TypeString && m.String() != "" {
			msg = m.String()
		}
		js.Global().Get("console").Call("error", "browserfl worker: "+msg)
		go func() {
			p.ee.Lock()
			p.state.Error = "This page could not start its WebAssembly program: " + msg
			p.ee.UnlockRender()
		}()
	})
	go p.receive()
	p.ee.Lock()
	p.send(bridge.ToWorker{Type: bridge.Start, Code: jsw.Query("code"), Origin: js.Global().Get("location").Get("origin").String()}, js.Undefined())
	p.ee.UnlockOnly()
	return nil
}

// receive handles the worker's messages in order.
func (p *page) receive() {
	for range p.in.wake {
		for _, data := range p.in.take() {
			if err := p.handle(data); err != nil {
				js.Global().Get("console").Call("warn", "browserfl: message from the worker ignored: "+err.Error())
			}
		}
	}
}

func (p *page) handle(data js.Value) error {
	if data.Type() != js.TypeObject || data.Get("msg").Type() != js.TypeString {
		return errors.New("not a {msg: string} object")
	}
	m, err := bridge.DecodeToPage(data.Get("msg").String())
	if err != nil {
		return err
	}
	switch m.Type {
	case bridge.Ready:
		p.ee.Lock()
		p.ready = true
		q := p.queue
		p.queue = nil
		for _, o := range q {
			p.post(o)
		}
		p.ee.UnlockOnly()
	case bridge.State:
		p.ee.Lock()
		err := bridge.Apply(p.state, m.Patch)
		if err == nil {
			err = bridge.Apply(&p.known, m.Patch)
		}
		p.ee.UnlockRender()
		return err
	case bridge.Perf:
		perf := js.Global().Get("performance")
		opts := js.Global().Get("Object").New()
		opts.Set("startTime", m.Epoch-p.perfAt)
		if bridge.PerfNames[m.Name] == bridge.PerfMeasure {
			opts.Delete("startTime")
			opts.Set("start", m.Epoch-p.perfAt)
			opts.Set("duration", m.Duration)
			_, err = jsw.Call(perf, "measure", m.Name, opts)
		} else {
			_, err = jsw.Call(perf, "mark", m.Name, opts)
		}
		return err
	case bridge.ClearTry:
		// The model has answered: the drawing stays beside its answer,
		// and the next stroke starts a new one.
		p.ee.Lock()
		p.try.StartAfresh()
		p.ee.UnlockOnly()
	}
	return nil
}

// send sends m (with files for a file pick) to the worker, after the
// page-written fields that changed (event lock held).
func (p *page) send(m bridge.ToWorker, files js.Value) {
	if m.Type != bridge.UI {
		p.flushUI()
	}
	text, err := bridge.Encode(m)
	if err != nil {
		js.Global().Get("console").Call("error", "browserfl: "+err.Error())
		return
	}
	o := outMsg{text: text, files: files}
	if !p.ready {
		p.queue = append(p.queue, o)
		return
	}
	p.post(o)
}

func (p *page) post(o outMsg) {
	msg := js.Global().Get("Object").New()
	msg.Set("msg", o.text)
	if !o.files.IsUndefined() {
		msg.Set("files", o.files)
	}
	p.worker.Call("postMessage", msg)
}

// flushUI sends the worker the page-written fields the student changed
// since the last message (event lock held).
func (p *page) flushUI() {
	if f := bridge.PageChanges(&p.known, p.state); f != nil {
		bridge.ApplyPage(&p.known, f)
		p.send(bridge.ToWorker{Type: bridge.UI, UI: f}, js.Undefined())
	}
}

// watchPageHide makes the device leave when the page is hidden for good
// (closed, reloaded, navigated away), and the coordinator stops asking
// it: the page's websocket relay (web/app.js) sends the device's leave
// message and closes the socket with 1000 on this thread, and the worker
// is told too, so its runtime does not reconnect while it lasts. A page kept in the back/forward
// cache and shown again reloads and resumes from its stored state.
func (p *page) watchPageHide() {
	w := js.Global().Get("window")
	jsw.Listen(w, "pagehide", func(js.Value) {
		if text, err := bridge.Encode(bridge.ToWorker{Type: bridge.Leave}); err == nil && p.worker.Truthy() {
			p.post(outMsg{text: text, files: js.Undefined()})
		}
	})
	jsw.Listen(w, "pageshow", func(ev js.Value) {
		if ev.Get("persisted").Truthy() {
			js.Global().Get("location").Call("reload")
		}
	})
}

// Join implements ui.Controller.
func (p *page) Join(budget float64) {
	p.send(bridge.ToWorker{Type: bridge.Join, Budget: budget}, js.Undefined())
}

// Decline implements ui.Controller.
func (p *page) Decline() { p.send(bridge.ToWorker{Type: bridge.Decline}, js.Undefined()) }

// LoadDemo implements ui.Controller.
func (p *page) LoadDemo() { p.send(bridge.ToWorker{Type: bridge.Demo}, js.Undefined()) }

// Train implements ui.Controller.
func (p *page) Train() { p.send(bridge.ToWorker{Type: bridge.Train}, js.Undefined()) }

// Forget implements ui.Controller.
func (p *page) Forget() { p.send(bridge.ToWorker{Type: bridge.Forget}, js.Undefined()) }

// DrawMore implements ui.Controller.
func (p *page) DrawMore() { p.send(bridge.ToWorker{Type: bridge.DrawMore}, js.Undefined()) }

// Done implements ui.Controller.
func (p *page) Done() { p.send(bridge.ToWorker{Type: bridge.Done}, js.Undefined()) }

// AddDrawing implements ui.Controller: the canvas's pixels go to the
// worker, which stores them as a sample.
func (p *page) AddDrawing(label int) {
	x, err := p.draw.Features()
	if err != nil {
		p.state.Data.DrawHint = "Drawing: " + err.Error()
		return
	}
	if local.Blank(x) {
		p.state.Data.DrawHint = "Draw something first, then add it."
		return
	}
	p.state.Data.DrawHint = ""
	p.draw.Clear()
	p.send(bridge.ToWorker{Type: bridge.Drawing, Label: label, Pixels: x}, js.Undefined())
}

// ClearDrawing implements ui.Controller.
func (p *page) ClearDrawing() { p.draw.Clear() }

// FilesPicked implements ui.Controller: the picked File objects go to
// the worker, which reads and parses them.
func (p *page) FilesPicked(ev vugu.DOMEvent) {
	if p.state.Data.Used > 0 {
		p.state.Error = p.state.Session.UsedNotice()
		return
	}
	list := js.Value(ev.JSEventTarget()).Get("files")
	if list.IsUndefined() || list.IsNull() || list.Length() == 0 {
		return
	}
	files := js.Global().Get("Array").Call("from", list)
	p.send(bridge.ToWorker{Type: bridge.Files, NFiles: files.Length()}, files)
}

// AddRow implements ui.Controller: the row (checked by the page) goes
// to the worker, which checks it again and stores it.
func (p *page) AddRow(values []string, label int) {
	p.send(bridge.ToWorker{Type: bridge.Row, Values: values, Label: label}, js.Undefined())
	// The form starts empty for the next row: vugu renders the value
	// attribute, which a field the student has typed in no longer
	// follows, so the fields' values are cleared here.
	fields := js.Global().Get("document").Call("querySelectorAll", "#row-card input, #row-card select")
	for i := 0; i < fields.Length(); i++ {
		fields.Index(i).Set("value", "")
	}
}

// TryRow implements ui.Controller: the worker, which holds the global
// model, answers for the row.
func (p *page) TryRow(values []string) {
	p.send(bridge.ToWorker{Type: bridge.TryRow, Values: values}, js.Undefined())
}

// TryModel implements ui.Controller: the worker, which holds the global
// model, classifies the drawing.
func (p *page) TryModel() {
	x, err := p.try.Features()
	if err != nil || local.Blank(x) {
		p.state.Train.Prediction = "Draw something first."
		return
	}
	p.send(bridge.ToWorker{Type: bridge.Try, Pixels: x}, js.Undefined())
}

// EnterCode implements ui.Controller. On the join screen the code goes
// to the worker, which opens the session without reloading the page (the
// program is not downloaded or compiled again); the address gets the code
// (history.replaceState), so a reload or a shared link opens the same
// session. Elsewhere ("Try again" on a full session) the page opens anew
// for that code, as if the student had followed a link.
func (p *page) EnterCode(code string) {
	loc := js.Global().Get("location")
	target := loc.Get("pathname").String() + "?code=" + url.QueryEscape(code)
	if p.state.Screen != ui.ScreenJoin {
		loc.Call("assign", target)
		return
	}
	if _, err := jsw.Call(js.Global().Get("history"), "replaceState", js.Null(), "", target); err != nil {
		js.Global().Get("console").Call("warn", "browserfl: address not updated: "+err.Error())
	}
	p.send(bridge.ToWorker{Type: bridge.Start, Code: code, Origin: loc.Get("origin").String()}, js.Undefined())
}

// afterRender binds the canvases of the current screen, draws "what
// your phone sent", and opens a new screen at its top (the browser keeps
// the old scroll position otherwise, and the new screen's top is cut
// off).
func (p *page) afterRender() {
	p.draw.Attach("draw")
	p.try.Attach("try")
	sent := p.state.Train.Sent
	p.pics.Draw("sent-clean", "sent-noisy", sent.Round, sent.Clean, sent.Noisy)
	top := p.state.Screen != p.screen
	p.screen = p.state.Screen
	if e := p.state.Error; e != p.shownError {
		p.shownError = e
		top = top || e != ""
	}
	if n := p.state.Data.Count; n != p.dataCount {
		// On the data screen only (pictures topped up while training
		// leave the page where it is); one drawing at a time adds one
		// sample: the page stays at the canvas.
		top = top || p.state.Screen == ui.ScreenData && n > p.dataCount+1
		p.dataCount = n
	}
	if top {
		js.Global().Get("window").Call("scrollTo", 0, 0)
	}
}
