//go:build !js

package device

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// FileStorage is a Storage in one file, replaced atomically (WriteAtomic:
// a temporary file in the same directory, fsync, rename, fsync of the
// directory) and checked when read: the file carries the state's length
// and SHA-256 in its first line, and a file whose state does not match
// them is refused with ErrBadState, never trusted. Native only.
type FileStorage struct {
	Path string
}

// NewFileStorage returns a FileStorage at path.
func NewFileStorage(path string) *FileStorage { return &FileStorage{Path: path} }

// ErrBadState is wrapped when a state file is damaged: cut short, or its
// state differs from the length and digest written with it.
var ErrBadState = errors.New("device: the state file is damaged")

// stateMagic starts the first line of a state file:
// "browserfl-device-state len=N sha256=HEX\n", then the state.
const stateMagic = "browserfl-device-state"

// Load implements Storage: the saved state, checked (ErrBadState if it
// is damaged), or nil if there is none.
func (f *FileStorage) Load(context.Context) ([]byte, error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load device state: %w", err)
	}
	state, err := openState(b)
	if err != nil {
		return nil, fmt.Errorf("load device state %s: %w", f.Path, err)
	}
	return state, nil
}

// CheckStateFile checks the state file at path as Load reads it: nil if
// it is absent or sound, an error wrapping ErrBadState if it is damaged.
func CheckStateFile(path string) error {
	_, err := (&FileStorage{Path: path}).Load(context.Background())
	return err
}

// openState returns the state a state file's bytes hold, checked. A file
// written before states carried their digest (a JSON object alone) is
// read if it is whole JSON.
func openState(b []byte) ([]byte, error) {
	if len(b) > 0 && b[0] == '{' {
		if !json.Valid(b) {
			return nil, fmt.Errorf("%w: not whole JSON (%d bytes)", ErrBadState, len(b))
		}
		return b, nil
	}
	head, state, ok := bytes.Cut(b, []byte("\n"))
	var n int
	var sum string
	if !ok {
		return nil, fmt.Errorf("%w: no header line (%d bytes)", ErrBadState, len(b))
	}
	if _, err := fmt.Sscanf(string(head), stateMagic+" len=%d sha256=%s", &n, &sum); err != nil {
		return nil, fmt.Errorf("%w: header %q: %v", ErrBadState, head, err)
	}
	if len(state) != n {
		return nil, fmt.Errorf("%w: %d bytes of state, the header says %d", ErrBadState, len(state), n)
	}
	if got := digest(state); got != sum {
		return nil, fmt.Errorf("%w: the state's SHA-256 is %s, the header says %s", ErrBadState, got, sum)
	}
	return state, nil
}

// digest is the hex SHA-256 of b.
func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Save implements Storage.
func (f *FileStorage) Save(_ context.Context, b []byte) error {
	head := stateMagic + " len=" + strconv.Itoa(len(b)) + " sha256=" + digest(b) + "\n"
	if err := WriteAtomic(f.Path, append([]byte(head), b...)); err != nil {
		return fmt.Errorf("save device state: %w", err)
	}
	return nil
}

// WriteAtomic replaces the file at path with b so that a crash at any
// moment leaves either the old file or the new one: b goes to a
// temporary file in the same directory, which is synced, renamed over
// path, and the directory is synced so that the rename lasts.
func WriteAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing there
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
