//go:build js && wasm

package samples

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"

	"browserfl/shared/task"
	"browserfl/wasm/local"
)

// The rows of a row task are kept as CSV text (task.Definition.WriteCSV),
// one record per source: data/<source>/rows; the samples of a source are
// their encoding (task.Definition.Set).

// ShuffleRows permutes a new source's rows once, with a seed from
// crypto/rand, before they are stored (see local.ShuffleRows).
func ShuffleRows(r task.Rows) error {
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return fmt.Errorf("shuffle seed: %w", err)
	}
	local.ShuffleRows(r, seed)
	return nil
}

// Rows returns the stored rows of src.
func (l *Library) Rows(src string) task.Rows {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rows[src]
}

// setRows records the rows of src (already stored) and their encoding.
func (l *Library) setRows(src string, r task.Rows) error {
	set, err := l.task.Set(src, r)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.rows[src] = r
	l.mu.Unlock()
	l.set(src, set)
	return nil
}

// SaveRows stores r as the rows of src (replacing what was there) and
// records them.
func (l *Library) SaveRows(ctx context.Context, src string, r task.Rows) error {
	l.rowsMu.Lock()
	defer l.rowsMu.Unlock()
	return l.saveRows(ctx, src, r)
}

// AddRows stores the rows of src followed by r, and records them.
func (l *Library) AddRows(ctx context.Context, src string, r task.Rows) error {
	l.rowsMu.Lock()
	defer l.rowsMu.Unlock()
	return l.saveRows(ctx, src, local.JoinRows(l.Rows(src), r))
}

// saveRows stores the rows of src as CSV (rowsMu held).
func (l *Library) saveRows(ctx context.Context, src string, r task.Rows) error {
	var b bytes.Buffer
	if err := l.task.WriteCSV(&b, r); err != nil {
		return err
	}
	if err := l.store.Put(ctx, map[string][]byte{KeyPrefix + src + "/rows": b.Bytes()}); err != nil {
		return err
	}
	if err := l.setRows(src, r); err != nil {
		return err
	}
	l.changed()
	return nil
}

// loadRows reads a source's stored rows (every one was checked before
// it was stored; a row the task refuses now is left out).
func (l *Library) loadRows(src string, b []byte) error {
	r, _, err := l.task.ReadCSV(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return l.setRows(src, r)
}
