//go:build js && wasm

package main

import (
	"fmt"
	"syscall/js"

	"github.com/vugu/vugu"
	"github.com/vugu/vugu/domrender"

	"browserfl/wasm/jsw"
	"browserfl/wasm/ui"
)

// main runs the half of the program its context calls for: the page
// (rendering and the student's input) where there is a document, the
// device (worker.go) in the page's dedicated Web Worker.
func main() {
	if js.Global().Get("document").IsUndefined() {
		if err := runWorker(); err != nil {
			js.Global().Get("console").Call("error", "browserfl worker: "+err.Error())
		}
		return
	}
	if err := runPage(); err != nil {
		// Nothing else can show it: put it on the page and the console.
		js.Global().Get("console").Call("error", "browserfl: "+err.Error())
		if el, e := jsw.ByID("vugu_mount_point"); e == nil {
			el.Set("textContent", "This page could not start: "+err.Error())
		}
	}
}

func runPage() error {
	renderer, err := domrender.New("#vugu_mount_point")
	if err != nil {
		return fmt.Errorf("renderer: %w", err)
	}
	defer renderer.Release()
	env, err := vugu.NewBuildEnv(renderer.EventEnv())
	if err != nil {
		return fmt.Errorf("build env: %w", err)
	}
	p := newPage(renderer.EventEnv())
	root := &ui.Root{State: p.state, Ctl: p}
	p.watchPageHide()
	if err := p.startWorker(); err != nil {
		return err
	}
	first := true
	for ok := true; ok; ok = renderer.EventWait() {
		// What the student changed directly (the error line, the
		// nickname, the label) goes to the worker, which owns the state.
		p.ee.Lock()
		p.flushUI()
		p.ee.UnlockOnly()
		t0 := jsw.Now()
		if err := renderer.Render(env.RunBuild(root)); err != nil {
			return fmt.Errorf("render: %w", err)
		}
		jsw.Measure("fl-render", t0)
		p.afterRender()
		if first {
			jsw.Mark("fl-first-render")
			first = false
		}
	}
	return nil
}
