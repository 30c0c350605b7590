//go:build js && wasm

package main

import (
	"errors"
	"fmt"
	"sync"
	"syscall/js"

	"browserfl/shared/wire"
	"browserfl/wasm/bridge"
	"browserfl/wasm/jsw"
	"browserfl/wasm/ui"
)

// port is the worker's end of the page's connection: messages to the
// page, and the performance marks the page records in its own timeline.
type port struct{ self js.Value }

// post sends m to the page.
func (p *port) post(m bridge.ToPage) {
	text, err := bridge.Encode(m)
	if err != nil {
		js.Global().Get("console").Call("error", "browserfl worker: "+err.Error())
		return
	}
	msg := js.Global().Get("Object").New()
	msg.Set("msg", text)
	p.self.Call("postMessage", msg)
}

// epoch is now in milliseconds since the Unix epoch, on the clock both
// timelines share (performance.timeOrigin + now()).
func epoch() float64 {
	perf := js.Global().Get("performance")
	return perf.Get("timeOrigin").Float() + perf.Call("now").Float()
}

// mark records a performance mark in the worker and in the page.
func (p *port) mark(name string) {
	jsw.Mark(name)
	p.post(bridge.ToPage{Type: bridge.Perf, Name: name, Epoch: epoch()})
}

// measure records a measure from start (the worker's performance.now())
// to now, in the worker and in the page.
func (p *port) measure(name string, start float64) {
	jsw.Measure(name, start)
	d := max(0, jsw.Now()-start)
	p.post(bridge.ToPage{Type: bridge.Perf, Name: name, Epoch: epoch() - d, Duration: d})
}

// inbox keeps the page's messages in order until the worker's goroutine
// handles them: the message event's callback only queues (it must not
// block), and handling in order matters (a "ui" message before the
// action that follows it).
type inbox struct {
	mu    sync.Mutex
	queue []js.Value
	wake  chan struct{}
}

func (b *inbox) push(v js.Value) {
	b.mu.Lock()
	b.queue = append(b.queue, v)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *inbox) take() []js.Value {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queue
	b.queue = nil
	return q
}

// runWorker is the program in the page's dedicated worker (web/worker.js):
// the device half. It tells the page it listens ("ready"), then performs
// the page's messages in order.
func runWorker() error {
	self := js.Global()
	p := &port{self: self}
	a := newApp(p)
	in := &inbox{wake: make(chan struct{}, 1)}
	jsw.Listen(self, "message", func(ev js.Value) { in.push(ev.Get("data")) })
	jsw.Listen(self, "messageerror", func(js.Value) {
		js.Global().Get("console").Call("warn", "browserfl worker: a message from the page could not be read")
	})
	// The leave message the page sends for the device when it goes away
	// (web/worker.js, web/app.js): the one Runtime.Leave sends.
	if farewell, err := wire.EncodeControl(wire.Leave{Reason: wire.LeaveStopped}); err == nil {
		self.Call("flFarewell", string(farewell))
	}
	p.post(bridge.ToPage{Type: bridge.Ready})
	started := false
	for range in.wake {
		for _, data := range in.take() {
			if err := a.handle(data, &started); err != nil {
				js.Global().Get("console").Call("warn", "browserfl worker: message ignored: "+err.Error())
			}
		}
	}
	return nil
}

// handle performs one message from the page.
func (a *app) handle(data js.Value, started *bool) error {
	if data.Type() != js.TypeObject || data.Get("msg").Type() != js.TypeString {
		return errors.New("not a {msg: string} object")
	}
	m, err := bridge.DecodeToWorker(data.Get("msg").String())
	if err != nil {
		return err
	}
	if m.Type == bridge.Start {
		// Another start only from the join screen: a code typed there
		// (or typed again after a wrong one) opens the session without
		// reloading the page.
		if *started && !a.leaveJoin() {
			return errors.New("a second start")
		}
		*started = true
		go a.start(m.Code, m.Origin)
		return nil
	}
	if !*started {
		return fmt.Errorf("%s before start", m.Type)
	}
	switch m.Type {
	case bridge.UI:
		a.update(func(s *ui.State) { bridge.ApplyPage(s, m.UI) })
	case bridge.Join:
		a.Join(m.Budget)
	case bridge.Decline:
		a.Decline()
	case bridge.Demo:
		a.LoadDemo()
	case bridge.Drawing:
		a.AddDrawing(m.Pixels, m.Label)
	case bridge.Files:
		files := data.Get("files")
		if files.Type() != js.TypeObject || files.Get("length").Type() != js.TypeNumber || files.Length() != m.NFiles {
			return errors.New("files: the File list does not match nfiles")
		}
		a.FilesPicked(files)
	case bridge.Train:
		a.Train()
	case bridge.Try:
		go a.TryModel(m.Pixels) // it may fetch the model: the loop goes on
	case bridge.Row:
		a.AddRow(m.Values, m.Label)
	case bridge.TryRow:
		go a.TryRow(m.Values)
	case bridge.Forget:
		a.Forget()
	case bridge.DrawMore:
		a.DrawMore()
	case bridge.Done:
		a.Done()
	case bridge.Leave:
		a.pageHidden()
	}
	return nil
}
