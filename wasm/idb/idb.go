//go:build js && wasm

package idb

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"syscall/js"

	"browserfl/wasm/jsw"
)

// storeName is the single object store of every database.
const storeName = "kv"

// ErrNotFound is returned by Get for a missing key.
var ErrNotFound = errors.New("idb: key not found")

// Store is an open IndexedDB database.
type Store struct {
	name string
	db   js.Value
}

// wait blocks until target fires one of ok (success) or fail events.
func wait(ctx context.Context, target js.Value, ok string, fail ...string) (js.Value, error) {
	type res struct {
		v   js.Value
		err error
	}
	ch := make(chan res, 1)
	var fns []js.Func
	done := false
	finish := func(r res) {
		if done {
			return
		}
		done = true
		ch <- r
	}
	okF := js.FuncOf(func(js.Value, []js.Value) any {
		finish(res{v: target})
		return nil
	})
	fns = append(fns, okF)
	target.Set("on"+ok, okF)
	for _, ev := range fail {
		ev := ev
		f := js.FuncOf(func(_ js.Value, args []js.Value) any {
			msg := ev
			if e := target.Get("error"); e.Type() == js.TypeObject {
				msg = ev + ": " + e.Get("name").String() + ": " + e.Get("message").String()
			}
			finish(res{err: errors.New("idb: " + msg)})
			return nil
		})
		fns = append(fns, f)
		target.Set("on"+ev, f)
	}
	release := func() {
		target.Set("on"+ok, js.Null())
		for _, ev := range fail {
			target.Set("on"+ev, js.Null())
		}
		for _, f := range fns {
			f.Release()
		}
	}
	select {
	case r := <-ch:
		release()
		return r.v, r.err
	case <-ctx.Done():
		go func() { <-ch; release() }()
		return js.Undefined(), ctx.Err()
	}
}

// Open opens (creating if needed) the database name. It blocks.
func Open(ctx context.Context, name string) (*Store, error) {
	factory := js.Global().Get("indexedDB")
	if factory.IsUndefined() || factory.IsNull() {
		return nil, errors.New("idb: IndexedDB is not available in this browser")
	}
	req, err := jsw.Call(factory, "open", name, 1)
	if err != nil {
		return nil, fmt.Errorf("idb: open %q: %w", name, err)
	}
	up := jsw.Listen(req, "upgradeneeded", func(js.Value) {
		db := req.Get("result")
		if !db.Get("objectStoreNames").Call("contains", storeName).Bool() {
			db.Call("createObjectStore", storeName)
		}
	})
	defer up()
	if _, err := wait(ctx, req, "success", "error", "blocked"); err != nil {
		return nil, fmt.Errorf("idb: open %q: %w", name, err)
	}
	return &Store{name: name, db: req.Get("result")}, nil
}

// Name returns the database name.
func (s *Store) Name() string { return s.name }

// Close closes the database connection.
func (s *Store) Close() error {
	_, err := jsw.Call(s.db, "close")
	return err
}

func (s *Store) tx(mode string) (tx, store js.Value, err error) {
	opts := js.Global().Get("Object").New()
	opts.Set("durability", "strict")
	tx, err = jsw.Call(s.db, "transaction", storeName, mode, opts)
	if err != nil {
		return js.Undefined(), js.Undefined(), fmt.Errorf("idb: transaction: %w", err)
	}
	store, err = jsw.Call(tx, "objectStore", storeName)
	return tx, store, err
}

// Get returns the value stored under key, or ErrNotFound. It blocks.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	_, st, err := s.tx("readonly")
	if err != nil {
		return nil, err
	}
	req, err := jsw.Call(st, "get", key)
	if err != nil {
		return nil, fmt.Errorf("idb: get %q: %w", key, err)
	}
	if _, err := wait(ctx, req, "success", "error"); err != nil {
		return nil, fmt.Errorf("idb: get %q: %w", key, err)
	}
	v := req.Get("result")
	if v.IsUndefined() || v.IsNull() {
		return nil, ErrNotFound
	}
	b, err := jsw.Bytes(v)
	if err != nil {
		return nil, fmt.Errorf("idb: get %q: %w", key, err)
	}
	return b, nil
}

// Put writes every pair atomically in one durable transaction; a nil
// value deletes its key. It returns after the transaction completed. It
// blocks.
func (s *Store) Put(ctx context.Context, pairs map[string][]byte) error {
	if len(pairs) == 0 {
		return nil
	}
	tx, st, err := s.tx("readwrite")
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(pairs))
	for k := range pairs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := pairs[k]
		if v == nil {
			_, err = jsw.Call(st, "delete", k)
		} else {
			_, err = jsw.Call(st, "put", jsw.Uint8Array(v), k)
		}
		if err != nil {
			jsw.Call(tx, "abort")
			return fmt.Errorf("idb: put %q: %w", k, err)
		}
	}
	if _, err := wait(ctx, tx, "complete", "error", "abort"); err != nil {
		return fmt.Errorf("idb: commit: %w", err)
	}
	return nil
}

// Keys returns the stored keys that start with prefix, sorted. It blocks.
func (s *Store) Keys(ctx context.Context, prefix string) ([]string, error) {
	_, st, err := s.tx("readonly")
	if err != nil {
		return nil, err
	}
	req, err := jsw.Call(st, "getAllKeys")
	if err != nil {
		return nil, fmt.Errorf("idb: keys: %w", err)
	}
	if _, err := wait(ctx, req, "success", "error"); err != nil {
		return nil, fmt.Errorf("idb: keys: %w", err)
	}
	all := req.Get("result")
	var out []string
	for i := 0; i < all.Length(); i++ {
		k := all.Index(i)
		if k.Type() == js.TypeString && strings.HasPrefix(k.String(), prefix) {
			out = append(out, k.String())
		}
	}
	sort.Strings(out)
	return out, nil
}

// Destroy closes the store and deletes its whole database. It blocks.
func (s *Store) Destroy(ctx context.Context) error {
	s.Close()
	return Delete(ctx, s.name)
}

// Delete deletes the database name (a no-op if it does not exist). It
// blocks.
func Delete(ctx context.Context, name string) error {
	req, err := jsw.Call(js.Global().Get("indexedDB"), "deleteDatabase", name)
	if err != nil {
		return fmt.Errorf("idb: delete %q: %w", name, err)
	}
	if _, err := wait(ctx, req, "success", "error"); err != nil {
		return fmt.Errorf("idb: delete %q: %w", name, err)
	}
	return nil
}

// OnDeleted calls f (once, on the JavaScript event loop: it must not
// block) when another party deletes this database or closes it under
// us: another tab's deleteDatabase or upgrade ("versionchange"; the
// connection is closed first so the deletion is not blocked), or the
// browser clearing the site's data ("close", fired only for an
// unexpected close, never for Close).
func (s *Store) OnDeleted(f func()) {
	var once bool
	fire := func(js.Value) {
		s.Close()
		if !once {
			once = true
			f()
		}
	}
	jsw.Listen(s.db, "versionchange", fire)
	jsw.Listen(s.db, "close", fire)
}

// Update reads key and writes f's result back in one readwrite
// transaction. IndexedDB runs readwrite transactions over the same store
// one at a time, across every tab and worker of the origin, so no other
// writer can come between the read and the write (a Get and a Put are two
// transactions, and two tabs can both read the old value). f gets the
// stored value (nil when there is none) and returns the value to write
// (nil: write nothing); an error from f aborts the transaction and is
// returned as is. f runs inside the read's success event, the only moment
// the transaction is still active: it must not block or call into
// JavaScript asynchronously.
func (s *Store) Update(ctx context.Context, key string, f func(old []byte) ([]byte, error)) error {
	tx, st, err := s.tx("readwrite")
	if err != nil {
		return err
	}
	req, err := jsw.Call(st, "get", key)
	if err != nil {
		jsw.Call(tx, "abort")
		return fmt.Errorf("idb: update %q: %w", key, err)
	}
	var ferr error
	onGet := js.FuncOf(func(js.Value, []js.Value) any {
		var old []byte
		if v := req.Get("result"); !v.IsUndefined() && !v.IsNull() {
			old, ferr = jsw.Bytes(v)
		}
		var b []byte
		if ferr == nil {
			b, ferr = f(old)
		}
		if ferr == nil && b != nil {
			if _, err := jsw.Call(st, "put", jsw.Uint8Array(b), key); err != nil {
				ferr = fmt.Errorf("idb: update %q: %w", key, err)
			}
		}
		if ferr != nil {
			jsw.Call(tx, "abort")
		}
		return nil
	})
	req.Set("onsuccess", onGet)
	_, werr := wait(ctx, tx, "complete", "error", "abort")
	if werr != nil && errors.Is(werr, ctx.Err()) {
		// The transaction may still fire the read's event: onGet stays.
		return werr
	}
	req.Set("onsuccess", js.Null())
	onGet.Release()
	switch {
	case ferr != nil:
		return ferr
	case werr != nil:
		return fmt.Errorf("idb: update %q: %w", key, werr)
	}
	return nil
}

// ErrNoLocks is returned by Exclusive when the browser has no Web Locks
// (navigator.locks): the caller decides what is safe without them.
var ErrNoLocks = errors.New("idb: this browser has no Web Locks (navigator.locks)")

// Exclusive runs f while holding the Web Lock name (navigator.locks, in a
// page or a worker), exclusive across every tab and worker of the origin:
// a second caller waits until f has returned. Without Web Locks it runs
// nothing and returns ErrNoLocks. If ctx ends before the lock is granted,
// the request is given up and ctx.Err() returned.
func Exclusive(ctx context.Context, name string, f func() error) error {
	locks := js.Global().Get("navigator").Get("locks")
	if locks.IsUndefined() || locks.IsNull() {
		return ErrNoLocks
	}
	// held settles when f has returned: the lock callback returns it, so
	// the browser keeps the lock until then.
	var resolve js.Value
	exec := js.FuncOf(func(_ js.Value, args []js.Value) any {
		resolve = args[0]
		return nil
	})
	held := js.Global().Get("Promise").New(exec)
	exec.Release()
	defer resolve.Invoke() // also releases a lock granted after ctx ended
	granted := make(chan struct{})
	cb := js.FuncOf(func(js.Value, []js.Value) any {
		close(granted)
		return held
	})
	abort := js.Global().Get("AbortController").New()
	opts := js.Global().Get("Object").New()
	opts.Set("mode", "exclusive")
	opts.Set("signal", abort.Get("signal"))
	req, err := jsw.Call(locks, "request", name, opts, cb)
	if err != nil {
		cb.Release()
		return fmt.Errorf("idb: lock %q: %w", name, err)
	}
	// req settles once the lock is released (or the request failed);
	// the callback is released then.
	failed := make(chan error, 1)
	go func() {
		_, err := jsw.Await(context.Background(), req)
		cb.Release()
		failed <- err
	}()
	select {
	case <-granted:
	case err := <-failed:
		if err == nil {
			err = errors.New("the lock request ended without the lock")
		}
		return fmt.Errorf("idb: lock %q: %w", name, err)
	case <-ctx.Done():
		abort.Call("abort")
		return ctx.Err()
	}
	return f()
}
