package device

import (
	"context"
	"sync"
)

// Storage persists the device's state blob. Save must be atomic: after a
// crash, Load returns either the previous or the new blob, never a mix.
type Storage interface {
	// Load returns the saved blob, or nil and no error if there is none.
	Load(ctx context.Context) ([]byte, error)
	// Save replaces the saved blob.
	Save(ctx context.Context, b []byte) error
}

// MemStorage is an in-memory Storage (tests, load tool). The zero value is
// empty and ready to use; it is safe for concurrent use.
type MemStorage struct {
	mu sync.Mutex
	b  []byte
}

// Load implements Storage.
func (m *MemStorage) Load(context.Context) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]byte(nil), m.b...), nil
}

// Save implements Storage.
func (m *MemStorage) Save(_ context.Context, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.b = append([]byte(nil), b...)
	return nil
}
