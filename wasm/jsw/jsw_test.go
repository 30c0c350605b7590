//go:build js && wasm

package jsw

import (
	"context"
	"errors"
	"syscall/js"
	"testing"

	"go.uber.org/goleak"

	"browserfl/wasm/internal/jstest"
)

// The tests run under node (make test-wasm-features: GOOS=js GOARCH=wasm
// with go_js_wasm_exec), whose Promise and EventTarget are the page's.

var (
	jsRuntime = jstest.IgnoreRuntime()
	running   = jstest.Running
)

// TestMain fails the package's tests if a goroutine they started is
// still running when they end (go.uber.org/goleak).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, jsRuntime)
}

// pending returns a promise that settles only when the test calls
// resolve or reject.
func pending(t *testing.T) (p js.Value, resolve, reject func(v any)) {
	t.Helper()
	var res, rej js.Value
	exec := js.FuncOf(func(_ js.Value, args []js.Value) any {
		res, rej = args[0], args[1]
		return nil
	})
	defer exec.Release()
	p = js.Global().Get("Promise").New(exec) // runs exec at once
	return p, func(v any) { res.Invoke(v) }, func(v any) { rej.Invoke(v) }
}

// TestAwait: a value that is no promise comes back as it is, a resolved
// promise gives its value, and a rejection becomes a *JSError naming what
// was thrown.
func TestAwait(t *testing.T) {
	promise := js.Global().Get("Promise")
	for _, tc := range []struct {
		name    string
		p       func() js.Value // made in the subtest: node ends on a rejection nobody handles
		want    int
		wantErr *JSError
	}{
		{"not a promise", func() js.Value { return js.ValueOf(7) }, 7, nil},
		{"resolved", func() js.Value { return promise.Call("resolve", 5) }, 5, nil},
		{"rejected with an Error", func() js.Value { return promise.Call("reject", js.Global().Get("TypeError").New("bad")) }, 0, &JSError{Name: "TypeError", Message: "bad"}},
		{"rejected with a string", func() js.Value { return promise.Call("reject", "no") }, 0, &JSError{Message: "no"}},
		{"rejected with nothing", func() js.Value { return promise.Call("reject") }, 0, &JSError{Message: "unknown error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Await(context.Background(), tc.p())
			if tc.wantErr != nil {
				var je *JSError
				if !errors.As(err, &je) || *je != *tc.wantErr {
					t.Fatalf("Await: error %v; want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || v.Int() != tc.want {
				t.Fatalf("Await = %v, %v; want %d", v, err, tc.want)
			}
		})
	}
}

// TestAwaitCancelled: when the context ends before the promise settles,
// Await returns the context's error at once and leaves one goroutine
// holding its callbacks; that goroutine ends (releasing them) as soon as
// the promise settles, either way. the goroutine stacks show both: the goroutine is
// there before the settling and gone after it.
func TestAwaitCancelled(t *testing.T) {
	for _, settle := range []string{"resolve", "reject"} {
		t.Run(settle, func(t *testing.T) {
			p, resolve, reject := pending(t)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := Await(ctx, p); !errors.Is(err, context.Canceled) {
				t.Fatalf("Await after cancel: %v; want context.Canceled", err)
			}
			if !running("browserfl/wasm/jsw.Await") {
				t.Fatal("no goroutine of Await after the cancel; want one, holding its callbacks")
			}
			if settle == "resolve" {
				resolve(1)
			} else {
				reject("late")
			}
			goleak.VerifyNone(t, jsRuntime) // retries, sleeping, so the promise's callback runs
		})
	}
}

// TestListen: the listener sees each event until it is released, and
// none after.
func TestListen(t *testing.T) {
	target := js.Global().Get("EventTarget").New()
	fire := func() { target.Call("dispatchEvent", js.Global().Get("Event").New("ping")) }
	n := 0
	release := Listen(target, "ping", func(ev js.Value) {
		if ev.Get("type").String() == "ping" {
			n++
		}
	})
	fire()
	fire()
	release()
	fire()
	if n != 2 {
		t.Fatalf("listener saw %d events; want the 2 before its release", n)
	}
}
