//go:build !js

package device

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// One suite for every Storage backend.
func TestStorage(t *testing.T) {
	ctx := context.Background()
	backends := map[string]Storage{
		"mem":  &MemStorage{},
		"file": NewFileStorage(filepath.Join(t.TempDir(), "state.json")),
	}
	for name, st := range backends {
		t.Run(name, func(t *testing.T) {
			b, err := st.Load(ctx)
			if err != nil || b != nil {
				t.Fatalf("empty Load = %q, %v; want nil, nil", b, err)
			}
			for _, v := range [][]byte{[]byte(`{"a":1}`), []byte(`{"b":2, "longer": true}`), []byte(`{}`)} {
				if err := st.Save(ctx, v); err != nil {
					t.Fatal(err)
				}
				got, err := st.Load(ctx)
				if err != nil || !bytes.Equal(got, v) {
					t.Fatalf("Load = %q, %v; want %q", got, err, v)
				}
			}
		})
	}
}

// TestFileStorageChecked: a state file is read only when whole: one
// written before states carried their digest is read if it is whole
// JSON; one cut short, with a byte changed, with a damaged header or
// left as an empty file by a crash is refused with ErrBadState, never
// trusted; no temporary file is left behind.
func TestFileStorageChecked(t *testing.T) {
	ctx := context.Background()
	state := []byte(`{"device_id":"dev-1","cursor":3}`)
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := NewFileStorage(path).Save(ctx, state); err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the directory after Save, want the state alone", len(entries))
	}
	for _, tc := range []struct {
		name string
		file []byte
		ok   bool
	}{
		{"as saved", saved, true},
		{"a state from before digests", state, true},
		{"a state from before digests, cut short", state[:10], false},
		{"cut short", saved[:len(saved)-5], false},
		{"cut in its header", saved[:20], false},
		{"a byte changed", append(bytes.Clone(saved[:len(saved)-1]), '!'), false},
		{"another length in the header", bytes.Replace(saved, fmt.Appendf(nil, "len=%d ", len(state)), fmt.Appendf(nil, "len=%d ", len(state)+1), 1), false},
		{"empty", []byte{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "state.json")
			if err := os.WriteFile(p, tc.file, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := NewFileStorage(p).Load(ctx)
			if tc.ok && (err != nil || !bytes.Equal(got, state)) {
				t.Errorf("Load = %q, %v; want the state", got, err)
			}
			if !tc.ok && (!errors.Is(err, ErrBadState) || got != nil || !errors.Is(CheckStateFile(p), ErrBadState)) {
				t.Errorf("Load = %q, %v; want ErrBadState", got, err)
			}
		})
	}
}
