//go:build js && wasm

package samples

import "testing"

// The tests run under node (make test-wasm-features: GOOS=js GOARCH=wasm
// with go_js_wasm_exec).

func TestFirstChunk(t *testing.T) {
	for _, c := range []struct{ b, want int }{
		{32, 12 * 32},
		{2, 12 * 2},
		{0, 12 * demoBatch}, // the session does not say its batch
	} {
		if got := FirstChunk(c.b); got != c.want {
			t.Errorf("FirstChunk(%d) = %d, want %d", c.b, got, c.want)
		}
	}
}

func TestNextChunk(t *testing.T) {
	const b = 32
	ahead := demoAheadRounds * b
	chunk := demoChunkRounds * b
	for _, c := range []struct {
		name                      string
		have, total, held, cursor int
		from, count               int
		ok, coming                bool
	}{
		{name: "no demo source", have: 0, total: 0},
		{name: "whole shard held", have: 6400, total: 6400, held: 6400},
		{name: "first chunk, nothing used", have: 384, total: 6400, held: 384, from: 384, count: chunk, ok: true, coming: true},
		{name: "enough ahead", have: 2048, total: 6400, held: 2048, cursor: 2048 - ahead, coming: true},
		{name: "one sample short of enough ahead", have: 2048, total: 6400, held: 2048, cursor: 2048 - ahead + 1, from: 2048, count: chunk, ok: true, coming: true},
		{name: "last chunk is what is left", have: 6000, total: 6400, held: 6000, cursor: 5990, from: 6000, count: 400, ok: true, coming: true},
		{name: "device holds less than stored", have: 384, total: 6400, held: 300},
		{name: "cursor past the demo samples", have: 384, total: 6400, held: 384, cursor: 385},
	} {
		from, count, ok, coming := NextChunk(c.have, c.total, c.held, c.cursor, b)
		if from != c.from || count != c.count || ok != c.ok || coming != c.coming {
			t.Errorf("%s: NextChunk = %d, %d, %v, %v; want %d, %d, %v, %v", c.name, from, count, ok, coming, c.from, c.count, c.ok, c.coming)
		}
	}
}
