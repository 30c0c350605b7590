package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// sleep waits d or until ctx is done (then it returns ctx's error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// teacher calls the teacher endpoint POST /api/teacher/action.
func teacher(ctx context.Context, base, action string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/teacher/"+action, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Teacher-Secret", teacherSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("teacher %s: %w", action, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("teacher %s: HTTP %d: %s", action, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return nil
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN() // no round in the window (printed as NaN, not a panic)
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitHealthy polls base/healthz until it answers 200 or ctx is done.
func waitHealthy(ctx context.Context, base string) error {
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
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("coordinator did not become healthy: %w", err)
		}
	}
}

func getJSON(ctx context.Context, url string, v any) error {
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

// lastCommitted returns the last committed round, at least after (which
// must be committed).
func lastCommitted(ctx context.Context, base string, after int) (int, error) {
	var recs []struct {
		T int `json:"t"`
	}
	if err := getJSON(ctx, base+"/api/rounds?code=LOADTEST&after="+strconv.Itoa(after), &recs); err != nil {
		return 0, err
	}
	last := after
	for _, r := range recs {
		last = max(last, r.T)
	}
	return last, nil
}

// settle waits, after a pause, until the round that was open (if any)
// has committed: until the last committed round has not changed for a
// second. It returns that round.
func settle(ctx context.Context, base string, committed int) (int, error) {
	for still := 0; still < 4; still++ {
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return 0, err
		}
		last, err := lastCommitted(ctx, base, committed)
		if err != nil {
			return 0, err
		}
		if last != committed {
			committed, still = last, -1
		}
	}
	return committed, nil
}
