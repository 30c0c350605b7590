package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"time"

	"browserfl/internal/loopback"
)

// LockedWriter serializes writes to a writer (NewLockedWriter).
type LockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLockedWriter returns a writer whose writes to w do not interleave.
func NewLockedWriter(w io.Writer) *LockedWriter { return &LockedWriter{w: w} }

// Write writes p to the underlying writer, one call at a time.
func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Sleep waits d or until ctx is done (then it returns ctx's error).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Quantile returns the q-quantile of sorted (nearest rank; NaN when empty).
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN() // no round in the window (printed as NaN, not a panic)
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// MiB converts bytes to MiB.
func MiB(b int64) float64 { return float64(b) / (1 << 20) }

// FreeAddr returns a local TCP address no one listens on now, below the
// kernel's ephemeral range (loopback.Free): the coordinator, NATS server
// or edge started on it cannot lose it to another program's port 0.
func FreeAddr() (string, error) { return loopback.Free() }

// WaitHealthy polls base/healthz until it answers 200 or ctx is done.
func WaitHealthy(ctx context.Context, base string) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if err := Sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("coordinator did not become healthy: %w", err)
		}
	}
}

// GetJSON decodes the JSON body of a GET of url into v.
func GetJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// PerDeviceKiB is bytes in KiB per device (0 without devices).
func PerDeviceKiB(bytes, devices int64) float64 {
	if devices <= 0 {
		return 0
	}
	return float64(bytes) / 1024 / float64(devices)
}

// ArgValue is the value of flag name in args ("" if absent).
func ArgValue(args []string, name string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name {
			return args[i+1]
		}
	}
	return ""
}
