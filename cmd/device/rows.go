package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"browserfl/shared/dataset"
	"browserfl/shared/plan"
	"browserfl/shared/task"
	"browserfl/shared/wire"
)

// checkAddress refuses a -url that is not a websocket address and an
// empty -code: no attempt could succeed.
func checkAddress(wsURL, code string) error {
	if code == "" {
		return errors.New("-code is required")
	}
	if u, err := url.Parse(wsURL); err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return fmt.Errorf("-url %q: want the coordinator's websocket address, ws://HOST:PORT/ws (wss:// with TLS)", wsURL)
	}
	return nil
}

// apiGet asks the coordinator behind wsURL for path?code=code and
// returns at most limit bytes of its answer. A wrong join code or a
// missing endpoint (403, 404) wraps errPermanent; anything else (the
// coordinator not up, 429, 5xx) may be asked again.
func apiGet(ctx context.Context, wsURL, path, code string, limit int64) ([]byte, http.Header, error) {
	u, err := url.Parse(wsURL)
	if err != nil {
		return nil, nil, fmt.Errorf("-url: %w: %w", err, errPermanent)
	}
	u.Scheme = strings.Replace(strings.Replace(u.Scheme, "wss", "https", 1), "ws", "http", 1)
	u.Path = path
	u.RawQuery = "code=" + url.QueryEscape(code)
	req, err := http.NewRequestWithContext(ctx, "GET", u.String(), nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound:
		// A wrong join code, or nothing of the kind here: asking again will not help.
		return nil, nil, fmt.Errorf("HTTP %d%s: %w", resp.StatusCode, saying(resp.Body), errPermanent)
	case resp.StatusCode != 200:
		// 429 (the gate's backoff), 5xx, a proxy's 502 while the coordinator starts.
		return nil, nil, fmt.Errorf("HTTP %d%s", resp.StatusCode, saying(resp.Body))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(b)) > limit {
		return nil, nil, fmt.Errorf("an answer over %d bytes: %w", limit, errPermanent)
	}
	return b, resp.Header, nil
}

// saying returns ` ("why")` from the first line of an error answer's
// body (at most 120 bytes, printable characters only), or "" if it says
// nothing: the coordinator says why it refused ("wrong join code", "demo
// shard unavailable").
func saying(body io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(body, 120))
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, line))
	if line == "" {
		return ""
	}
	return " (" + line + ")"
}

// fetchSession returns the session's public parameters
// (/api/session), validated.
func fetchSession(ctx context.Context, wsURL, code string) (wire.SessionParams, error) {
	var s wire.SessionParams
	// A task definition travels JSON-escaped inside the parameters.
	b, _, err := apiGet(ctx, wsURL, "/api/session", code, wire.MaxControlBytes+6*wire.MaxTaskLen)
	if err != nil {
		return s, fmt.Errorf("session: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("session: %w: %w", err, errPermanent)
	}
	if err := wire.ValidateSession(s); err != nil {
		return s, fmt.Errorf("session: %w: %w", err, errPermanent)
	}
	return s, nil
}

// fetchRows asks the coordinator for a demo shard of a row task's rows,
// as CSV (demo only), and the digest it states for them (empty if none).
func fetchRows(ctx context.Context, wsURL, code string) ([]byte, string, error) {
	b, h, err := apiGet(ctx, wsURL, "/api/demo/rows", code, task.MaxCSVBytes)
	if err != nil {
		return nil, "", fmt.Errorf("demo rows: %w", err)
	}
	return b, h.Get(wire.DigestHeader), nil
}

// waitFor calls f with the command's retry (jittered doubling from 0.5 s
// to 30 s, each failure logged) until it succeeds, fails for good, or
// the owner stops the device (Ctrl-C: context.Canceled).
func waitFor(ctx context.Context, log *slog.Logger, what string, f func(context.Context) error) error {
	fctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return retry{Min: 500 * time.Millisecond, Max: 30 * time.Second, OnWait: logRetries(log, what)}.do(fctx, f)
}

// readRows returns the device's rows of task d, encoded: the CSV file
// rowsFile if set (the owner's own rows), else DIR/rows.csv, else the
// coordinator's demo rows (kept as DIR/rows.csv with their digest,
// keep). Kept demo rows that do not match their digest are set aside and
// fetched again. Lines the task refuses are logged with their line
// numbers and left out; a file without one usable row is an error.
func readRows(ctx context.Context, d *task.Definition, rowsFile, dir, wsURL, code string, log *slog.Logger) (dataset.Set, error) {
	if rowsFile != "" {
		b, err := os.ReadFile(rowsFile)
		if err != nil {
			return dataset.Set{}, err
		}
		return parseRows(d, rowsFile, b, log)
	}
	path := filepath.Join(dir, "rows.csv")
	b, _, err := readKept(path)
	if errors.Is(err, errDamaged) {
		if err = setAside(path, err, log); err == nil {
			err = os.ErrNotExist
		}
	}
	if errors.Is(err, os.ErrNotExist) {
		err = waitFor(ctx, log, "demo rows", func(ctx context.Context) (err error) {
			var stated string
			if b, stated, err = fetchRows(ctx, wsURL, code); err != nil {
				return err
			}
			return keep(path, b, stated)
		})
	}
	if err != nil {
		return dataset.Set{}, err
	}
	return parseRows(d, path, b, log)
}

// parseRows reads CSV rows of task d (ReadCSV), logging each refused
// line.
func parseRows(d *task.Definition, name string, b []byte, log *slog.Logger) (dataset.Set, error) {
	rows, refused, err := d.ReadCSV(bytes.NewReader(b))
	if err != nil {
		return dataset.Set{}, fmt.Errorf("%s: %w", name, err)
	}
	for _, e := range refused {
		log.Warn("row refused", "file", name, "line", e.Line, "why", e.Err.Error())
	}
	if rows.Len() == 0 {
		return dataset.Set{}, fmt.Errorf("%s: no row fits the task %q (%d refused)", name, d.Name, len(refused))
	}
	return d.Set(name, rows)
}

// sessionTask returns the session's row task (nil for a picture
// session), asking the coordinator with the command's retry.
func sessionTask(ctx context.Context, wsURL, code string, log *slog.Logger) (*task.Definition, error) {
	var s wire.SessionParams
	err := waitFor(ctx, log, "session", func(ctx context.Context) (err error) {
		s, err = fetchSession(ctx, wsURL, code)
		return err
	})
	if err != nil {
		return nil, err
	}
	d, err := plan.SessionTask(s)
	if err != nil {
		return nil, fmt.Errorf("the session's task: %w", err)
	}
	return d, nil
}
