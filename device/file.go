//go:build !js

package device

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// FileStorage is a Storage in one file, replaced atomically (write to a
// temporary file, fsync, rename). Native only.
type FileStorage struct {
	Path string
}

// NewFileStorage returns a FileStorage at path.
func NewFileStorage(path string) *FileStorage { return &FileStorage{Path: path} }

// Load implements Storage.
func (f *FileStorage) Load(context.Context) ([]byte, error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load device state: %w", err)
	}
	return b, nil
}

// Save implements Storage.
func (f *FileStorage) Save(_ context.Context, b []byte) error {
	dir := filepath.Dir(f.Path)
	tmp, err := os.CreateTemp(dir, ".device-state-*")
	if err != nil {
		return fmt.Errorf("save device state: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("save device state: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("save device state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save device state: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.Path); err != nil {
		return fmt.Errorf("save device state: %w", err)
	}
	return nil
}
