//go:build !js

package device

import (
	"bytes"
	"context"
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
