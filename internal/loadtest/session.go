package loadtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The coordinator's session API as the load test drives it: the
// teacher's actions, and the committed rounds' records (join code
// LOADTEST).

// Teacher calls the teacher endpoint POST /api/teacher/action of the
// coordinator at base with the teacher secret.
func Teacher(ctx context.Context, base, secret, action string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/teacher/"+action, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Teacher-Secret", secret)
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

// RoundRecord is what the load test reads of a round's record
// (/api/rounds).
type RoundRecord struct {
	T         int   `json:"t"`
	Cohort    int   `json:"cohort"`
	Included  int   `json:"included"`
	LatencyMs int64 `json:"latency_ms"`
	BytesIn   int64 `json:"bytes_in"`
	BytesOut  int64 `json:"bytes_out"`
}

// Rounds returns the records of the rounds after round after (0: all)
// of the coordinator at base.
func Rounds(ctx context.Context, base string, after int) ([]RoundRecord, error) {
	var recs []RoundRecord
	err := GetJSON(ctx, base+"/api/rounds?code=LOADTEST&after="+strconv.Itoa(after), &recs)
	return recs, err
}

// LastCommitted returns the last committed round, at least after (which
// must be committed).
func LastCommitted(ctx context.Context, base string, after int) (int, error) {
	recs, err := Rounds(ctx, base, after)
	if err != nil {
		return 0, err
	}
	last := after
	for _, r := range recs {
		last = max(last, r.T)
	}
	return last, nil
}

// Settle waits, after a pause, until the round that was open (if any)
// has committed: until the last committed round has not changed for a
// second. It returns that round.
func Settle(ctx context.Context, base string, committed int) (int, error) {
	for still := 0; still < 4; still++ {
		if err := Sleep(ctx, 250*time.Millisecond); err != nil {
			return 0, err
		}
		last, err := LastCommitted(ctx, base, committed)
		if err != nil {
			return 0, err
		}
		if last != committed {
			committed, still = last, -1
		}
	}
	return committed, nil
}

// WaitRounds waits until the coordinator at base has recorded round T,
// looking every poll. It polls /api/rounds after the last round seen: a
// cheap store read, where /api/status would cost the coordinator a sort
// of every device per poll.
func WaitRounds(ctx context.Context, base string, T int, poll time.Duration) error {
	for committed := 0; committed < T; {
		if err := Sleep(ctx, poll); err != nil {
			return fmt.Errorf("%d of %d rounds committed: %w", committed, T, err)
		}
		last, err := LastCommitted(ctx, base, committed)
		if err != nil {
			return err
		}
		committed = last
	}
	return nil
}

// Paused is a coordinator started by StartPaused.
type Paused struct {
	Base string          // its URL, http://addr
	Addr string          // its listen address
	PID  int             // its process
	Ctx  context.Context // done when it exits
	// Stop stops it and removes its data directory.
	Stop func()
}

// StartPaused starts the coordinator bin with args(addr, dir), its data
// in a new temporary directory dir holding the teacher secret
// (host.json), on a free loopback address addr; waits until it is
// healthy and pauses its session. Stop the result (also on error).
func StartPaused(ctx context.Context, bin, secret string, args func(addr, dir string) []string, stderr io.Writer) (*Paused, error) {
	p := &Paused{Stop: func() {}}
	dir, err := os.MkdirTemp("", "bfl-loadtest-")
	if err != nil {
		return p, err
	}
	p.Stop = func() { os.RemoveAll(dir) }
	if err := os.WriteFile(filepath.Join(dir, "host.json"), []byte(`{"teacher_secret":"`+secret+`"}`), 0o600); err != nil {
		return p, err
	}
	if p.Addr, err = FreeAddr(); err != nil {
		return p, err
	}
	coord, cctx, stop, err := StartCoordinator(ctx, bin, args(p.Addr, dir), stderr)
	if err != nil {
		return p, err
	}
	p.Base, p.PID, p.Ctx = "http://"+p.Addr, coord.Cmd.Process.Pid, cctx
	p.Stop = func() { stop(); os.RemoveAll(dir) }
	if err := WaitHealthy(cctx, p.Base); err != nil {
		return p, err
	}
	return p, Teacher(cctx, p.Base, secret, "pause")
}
