//go:build js && wasm

package jsw

import (
	"context"
	"errors"
	"fmt"
	"syscall/js"
)

// Global returns the JavaScript global object.
func Global() js.Value { return js.Global() }

// JSError is a JavaScript exception or rejection turned into a Go error.
type JSError struct {
	Name, Message string
}

func (e *JSError) Error() string {
	if e.Name == "" {
		return "js: " + e.Message
	}
	return "js: " + e.Name + ": " + e.Message
}

// errorOf converts a rejection reason or exception value to an error.
func errorOf(v js.Value) error {
	if v.Type() == js.TypeObject {
		name, msg := v.Get("name"), v.Get("message")
		e := &JSError{}
		if name.Type() == js.TypeString {
			e.Name = name.String()
		}
		if msg.Type() == js.TypeString {
			e.Message = msg.String()
		} else {
			e.Message = js.Global().Get("String").Invoke(v).String()
		}
		return e
	}
	if v.Type() == js.TypeUndefined || v.Type() == js.TypeNull {
		return &JSError{Message: "unknown error"}
	}
	return &JSError{Message: js.Global().Get("String").Invoke(v).String()}
}

// Try runs f and converts a JavaScript exception thrown inside it into an
// error instead of a Go panic.
func Try(f func() js.Value) (v js.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			var je js.Error
			if e, ok := r.(js.Error); ok {
				je = e
				err = errorOf(je.Value)
				return
			}
			err = fmt.Errorf("js: %v", r)
		}
	}()
	return f(), nil
}

// Call invokes method on v, converting exceptions to errors.
func Call(v js.Value, method string, args ...any) (js.Value, error) {
	return Try(func() js.Value { return v.Call(method, args...) })
}

// Await blocks until promise p settles and returns its value or its
// rejection as an error. It returns ctx.Err() if ctx ends first (the
// promise keeps running). Do not call it from a js.Func callback.
func Await(ctx context.Context, p js.Value) (js.Value, error) {
	if p.Type() != js.TypeObject || p.Get("then").Type() != js.TypeFunction {
		return p, nil // not a promise: already a value
	}
	type result struct {
		v   js.Value
		err error
	}
	ch := make(chan result, 1)
	var onOK, onErr js.Func
	release := func() { onOK.Release(); onErr.Release() }
	onOK = js.FuncOf(func(_ js.Value, args []js.Value) any {
		var v js.Value
		if len(args) > 0 {
			v = args[0]
		}
		ch <- result{v: v}
		return nil
	})
	onErr = js.FuncOf(func(_ js.Value, args []js.Value) any {
		var v js.Value
		if len(args) > 0 {
			v = args[0]
		}
		ch <- result{err: errorOf(v)}
		return nil
	})
	if _, err := Call(p, "then", onOK, onErr); err != nil {
		release()
		return js.Undefined(), err
	}
	select {
	case r := <-ch:
		release()
		return r.v, r.err
	case <-ctx.Done():
		// The callbacks stay registered until the promise settles; they
		// write to a buffered channel nobody reads, then are released.
		go func() { <-ch; release() }()
		return js.Undefined(), ctx.Err()
	}
}

// Bytes copies a Uint8Array, ArrayBuffer or other typed array into a new
// Go slice.
func Bytes(v js.Value) ([]byte, error) {
	u8 := js.Global().Get("Uint8Array")
	switch {
	case v.InstanceOf(u8):
	case v.InstanceOf(js.Global().Get("ArrayBuffer")):
		v = u8.New(v)
	case v.Type() == js.TypeObject && v.Get("buffer").Type() == js.TypeObject:
		v = u8.New(v.Get("buffer"), v.Get("byteOffset"), v.Get("byteLength"))
	default:
		return nil, errors.New("jsw: value is not a byte array")
	}
	b := make([]byte, v.Get("length").Int())
	js.CopyBytesToGo(b, v)
	return b, nil
}

// Uint8Array copies b into a new JavaScript Uint8Array.
func Uint8Array(b []byte) js.Value {
	a := js.Global().Get("Uint8Array").New(len(b))
	js.CopyBytesToJS(a, b)
	return a
}

// The HTTP statuses the page tells apart (net/http's values: the page
// does not link net/http, see wasm/socket).
const (
	StatusForbidden           = 403
	StatusNotFound            = 404
	StatusRangeNotSatisfiable = 416
	StatusTooManyRequests     = 429
)

// HTTPError is a response with a status other than 2xx.
type HTTPError struct {
	URL    string
	Status int
}

func (e *HTTPError) Error() string { return fmt.Sprintf("fetch %s: HTTP %d", e.URL, e.Status) }

// Fetch GETs url with the page's fetch and returns the body. It blocks.
func Fetch(ctx context.Context, url string) ([]byte, error) {
	b, _, err := FetchHeader(ctx, url, "")
	return b, err
}

// FetchHeader is Fetch that also returns the response's header name
// ("" when absent, or when name is "").
func FetchHeader(ctx context.Context, url, name string) (body []byte, header string, err error) {
	resp, err := Await(ctx, js.Global().Call("fetch", url))
	if err != nil {
		return nil, "", fmt.Errorf("fetch %s: %w", url, err)
	}
	if !resp.Get("ok").Bool() {
		return nil, "", &HTTPError{URL: url, Status: resp.Get("status").Int()}
	}
	if name != "" {
		if h := resp.Get("headers").Call("get", name); h.Type() == js.TypeString {
			header = h.String()
		}
	}
	buf, err := Await(ctx, resp.Call("arrayBuffer"))
	if err != nil {
		return nil, "", fmt.Errorf("fetch %s: body: %w", url, err)
	}
	body, err = Bytes(buf)
	return body, header, err
}

// ByID returns the element with the given id, or an error if the page
// has none.
func ByID(id string) (js.Value, error) {
	el := js.Global().Get("document").Call("getElementById", id)
	if el.IsNull() || el.IsUndefined() {
		return js.Undefined(), fmt.Errorf("jsw: no element #%s", id)
	}
	return el, nil
}

// Listen adds an event listener to target and returns the function that
// removes it and releases the callback. fn runs on the JavaScript event
// loop: it must not block.
func Listen(target js.Value, event string, fn func(ev js.Value)) (release func()) {
	f := js.FuncOf(func(_ js.Value, args []js.Value) any {
		if len(args) > 0 {
			fn(args[0])
		}
		return nil
	})
	target.Call("addEventListener", event, f)
	return func() {
		target.Call("removeEventListener", event, f)
		f.Release()
	}
}

// Now returns performance.now() in milliseconds.
func Now() float64 { return js.Global().Get("performance").Call("now").Float() }

// Mark records performance.mark(name), visible to the browser test
// through the Performance API.
func Mark(name string) { js.Global().Get("performance").Call("mark", name) }

// Yield lets the browser run its event loop (paint, input, timers) before
// returning: it awaits a zero-delay timer. Long computations call it
// between chunks so no single task blocks the page. It blocks.
func Yield(ctx context.Context) error {
	ch := make(chan struct{})
	f := js.FuncOf(func(js.Value, []js.Value) any { close(ch); return nil })
	defer f.Release()
	js.Global().Call("setTimeout", f, 0)
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		<-ch // the timer fires promptly; wait so f can be released safely
		return ctx.Err()
	}
}

// Query returns location.search parameter name ("" if absent).
func Query(name string) string {
	p := js.Global().Get("URLSearchParams").New(js.Global().Get("location").Get("search"))
	v := p.Call("get", name)
	if v.IsNull() {
		return ""
	}
	return v.String()
}

// Measure records a performance measure called name from start (a Now()
// value) to now, visible to the browser test through the Performance API.
func Measure(name string, start float64) {
	opts := js.Global().Get("Object").New()
	opts.Set("start", start)
	opts.Set("end", Now())
	Try(func() js.Value { return js.Global().Get("performance").Call("measure", name, opts) })
}
