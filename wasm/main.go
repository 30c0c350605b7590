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

func main() {
	if err := run(); err != nil {
		// Nothing else can show it: put it on the page and the console.
		js.Global().Get("console").Call("error", "browserfl: "+err.Error())
		if el, e := jsw.ByID("vugu_mount_point"); e == nil {
			el.Set("textContent", "This page could not start: "+err.Error())
		}
	}
}

func run() error {
	renderer, err := domrender.New("#vugu_mount_point")
	if err != nil {
		return fmt.Errorf("renderer: %w", err)
	}
	defer renderer.Release()
	env, err := vugu.NewBuildEnv(renderer.EventEnv())
	if err != nil {
		return fmt.Errorf("build env: %w", err)
	}
	a := newApp(renderer.EventEnv())
	root := &ui.Root{State: a.state, Ctl: a}
	a.watchPageHide()
	go a.start()
	first := true
	for ok := true; ok; ok = renderer.EventWait() {
		t0 := jsw.Now()
		if err := renderer.Render(env.RunBuild(root)); err != nil {
			return fmt.Errorf("render: %w", err)
		}
		jsw.Measure("fl-render", t0)
		a.afterRender()
		if first {
			jsw.Mark("fl-first-render")
			first = false
		}
	}
	return nil
}
