//go:build js && wasm

package idb

import (
	"context"
	"errors"
	"syscall/js"
	"testing"

	"go.uber.org/goleak"

	"browserfl/wasm/internal/jstest"
)

// The tests run under node (make test-wasm-features: GOOS=js GOARCH=wasm
// with go_js_wasm_exec). Node has no IndexedDB and no Web Locks, so they
// drive the package's waiting on plain objects that fire the same events
// (an IDBRequest's onsuccess/onerror) and on a stand-in navigator.locks
// that keeps the Web Locks contract Exclusive relies on (request's
// promise settles with the callback's, or rejects on the signal's abort).
// The real ones are the browser tests'.

var (
	jsRuntime = jstest.IgnoreRuntime()
	running   = jstest.Running
)

// TestMain fails the package's tests if a goroutine they started is
// still running when they end (go.uber.org/goleak).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, jsRuntime)
}

// jsFunc compiles a JavaScript function from its parameters and body.
func jsFunc(params, body string) js.Value {
	return js.Global().Get("Function").New(params, body)
}

// fireLater makes target fire its on<ev> handler from a timer, as a
// browser fires a request's events from its event loop, with err (if not
// null) as target.error.
func fireLater(target js.Value, ev string, err js.Value) {
	jsFunc("t, ev, err", "setTimeout(() => { if (err !== null) t.error = err; t['on' + ev]({type: ev}); }, 0)").Invoke(target, ev, err)
}

// TestWait: wait returns the target on its success event and the named
// error on a failure event, and leaves no handler set either way.
func TestWait(t *testing.T) {
	domErr := jsFunc("", "return {name: 'QuotaExceededError', message: 'full'}").Invoke()
	for _, tc := range []struct {
		name, fire string
		err        js.Value
		wantErr    string
	}{
		{"success", "success", js.Null(), ""},
		{"error", "error", domErr, "idb: error: QuotaExceededError: full"},
		{"blocked", "blocked", js.Null(), "idb: blocked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := js.Global().Get("Object").New()
			fireLater(target, tc.fire, tc.err)
			v, err := wait(context.Background(), target, "success", "error", "blocked")
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("wait: %v; want %q", err, tc.wantErr)
				}
			} else if err != nil || !v.Equal(target) {
				t.Fatalf("wait = %v, %v; want the target", v, err)
			}
			for _, ev := range []string{"success", "error", "blocked"} {
				if h := target.Get("on" + ev); !h.IsNull() {
					t.Errorf("on%s after wait is %v; want null", ev, h.Type())
				}
			}
		})
	}
}

// TestWaitCancelled: when the context ends before the event, wait returns
// the context's error at once and leaves one goroutine holding the
// handlers; it ends, clearing them, when the event comes.
func TestWaitCancelled(t *testing.T) {
	target := js.Global().Get("Object").New()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := wait(ctx, target, "success", "error"); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait after cancel: %v; want context.Canceled", err)
	}
	if !running("browserfl/wasm/idb.wait") {
		t.Fatal("no goroutine of wait after the cancel; want one, holding the handlers")
	}
	fireLater(target, "success", js.Null())
	goleak.VerifyNone(t, jsRuntime) // retries, sleeping, so the timer fires
	if h := target.Get("onsuccess"); !h.IsNull() {
		t.Errorf("onsuccess after the event is %v; want null", h.Type())
	}
}

// fakeLocks installs a stand-in navigator.locks for the test: request
// grants a lock (calling the callback from a timer) unless its signal has
// aborted, and its promise settles with the callback's result or rejects
// on the abort. It counts the grants in navigator.locks.granted.
func fakeLocks(t *testing.T) js.Value {
	t.Helper()
	locks := jsFunc("", `return {
		granted: 0,
		request(name, opts, cb) {
			return new Promise((resolve, reject) => {
				opts.signal.addEventListener('abort', () => reject(new Error('aborted')));
				setTimeout(() => {
					if (opts.signal.aborted) return;
					this.granted++;
					resolve(cb());
				}, 0);
			});
		},
	}`).Invoke()
	nav := js.Global().Get("Object").New()
	nav.Set("locks", locks)
	old := js.Global().Get("navigator")
	js.Global().Set("navigator", nav)
	t.Cleanup(func() { js.Global().Set("navigator", old) })
	return locks
}

// TestExclusive: f runs under a granted lock and its error comes back;
// if the context ends before the grant, the request is aborted, f never
// runs, and the goroutine awaiting the request ends; without Web Locks
// nothing runs.
func TestExclusive(t *testing.T) {
	t.Run("granted", func(t *testing.T) {
		locks := fakeLocks(t)
		errF := errors.New("f failed")
		ran := false
		err := Exclusive(context.Background(), "device", func() error { ran = locks.Get("granted").Int() == 1; return errF })
		if !errors.Is(err, errF) || !ran {
			t.Fatalf("Exclusive: %v, f ran under the lock: %v; want f's error after one grant", err, ran)
		}
		goleak.VerifyNone(t, jsRuntime) // the request settles once f has returned
	})
	t.Run("cancelled before the grant", func(t *testing.T) {
		locks := fakeLocks(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		ran := false
		if err := Exclusive(ctx, "device", func() error { ran = true; return nil }); !errors.Is(err, context.Canceled) || ran {
			t.Fatalf("Exclusive after cancel: %v, f ran: %v; want context.Canceled and f not run", err, ran)
		}
		goleak.VerifyNone(t, jsRuntime) // the aborted request rejects; its awaiting goroutine ends
		if n := locks.Get("granted").Int(); n != 0 {
			t.Errorf("%d locks granted after the abort; want 0", n)
		}
	})
	t.Run("no Web Locks", func(t *testing.T) {
		old := js.Global().Get("navigator")
		js.Global().Set("navigator", js.Global().Get("Object").New())
		defer js.Global().Set("navigator", old)
		if err := Exclusive(context.Background(), "device", func() error { t.Error("f ran without a lock"); return nil }); !errors.Is(err, ErrNoLocks) {
			t.Fatalf("Exclusive without locks: %v; want ErrNoLocks", err)
		}
	})
}
