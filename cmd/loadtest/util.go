package main

import (
	"browserfl/internal/loadtest"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

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

// lastCommitted returns the last committed round, at least after (which
// must be committed).
func lastCommitted(ctx context.Context, base string, after int) (int, error) {
	var recs []struct {
		T int `json:"t"`
	}
	if err := loadtest.GetJSON(ctx, base+"/api/rounds?code=LOADTEST&after="+strconv.Itoa(after), &recs); err != nil {
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
		if err := loadtest.Sleep(ctx, 250*time.Millisecond); err != nil {
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
