package main

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"browserfl/coordinator/sessions"
	"browserfl/shared/plan"
	"browserfl/shared/task"
	"browserfl/shared/wire"
)

// rowDataDir returns a built-in row task's data directory from this
// package's directory; the test is skipped only when it is absent and
// BFL_REQUIRE_DATA is unset (`make test` sets it).
func rowDataDir(t *testing.T, name string) string {
	t.Helper()
	b, err := task.LookupBuiltin(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := b.DefaultDir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", "..", dir)
	}
	if _, _, err := b.LoadRows(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) && os.Getenv("BFL_REQUIRE_DATA") == "" {
			t.Skipf("skipped: %s's data is absent (%v); run `make setup` (make test requires it)", name, err)
		}
		t.Fatal(err)
	}
	return dir
}

// TestRowTaskSession: `-task tabular` and `-task text` serve a session
// that carries the task (plan.SessionTask reads it back and it matches
// the session's shape), evaluate on the task's test rows, and hand each
// page a demo shard of CSV rows that the task reads back without a
// refused line; the picture endpoints are not served.
func TestRowTaskSession(t *testing.T) {
	for _, name := range []string{"tabular", "text"} {
		t.Run(name, func(t *testing.T) {
			dir := rowDataDir(t, name)
			o, err := parse([]string{"-task", name, "-dataset", dir, "-join-code", "ROWTASKCODE"}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			td, err := loadTask(o)
			if err != nil {
				t.Fatal(err)
			}
			a, err := assembleSession(o, td, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			def, err := plan.SessionTask(a.sess)
			if err != nil || def == nil || def.Name != name {
				t.Fatalf("session task: %v, %v", def, err)
			}
			if a.sess.Features != def.Dim() || a.sess.Dim != a.mdl.Dim() || a.sess.Model != def.Model {
				t.Errorf("shape: features %d (task %d), dim %d, model %q", a.sess.Features, def.Dim(), a.sess.Dim, a.sess.Model)
			}
			log := slog.New(slog.DiscardHandler)
			eval, err := evalSet(o, a, td, log)
			if err != nil || eval.Len() != min(o.EvalSamples, td.testLen) || len(eval.samples[0].X) != def.Dim() {
				t.Fatalf("evaluation set: %d samples, %v", eval.Len(), err)
			}
			var host *sessions.Host
			sh, err := demoShards(o, a, td, func() int { return host.Current().Committed() }, log)
			if err != nil || sh == nil || !sh.Rows() {
				t.Fatalf("demo shards: %v, %v", sh, err)
			}
			host, err = sessions.Open(sessions.Config{Dir: t.TempDir(), Template: template(o, a, 0, eval, log),
				JoinCode: o.JoinCode, Logger: log, Shards: sh})
			if err != nil {
				t.Fatal(err)
			}
			defer host.Close()
			srv := httptest.NewServer(host)
			defer srv.Close()

			var got wire.SessionParams
			sr, err := http.Get(srv.URL + "/api/session?code=" + o.JoinCode)
			if err != nil {
				t.Fatal(err)
			}
			err = json.NewDecoder(sr.Body).Decode(&got)
			sr.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if got.Task != a.sess.Task || got.Features != def.Dim() {
				t.Errorf("/api/session: task %d bytes, features %d; want the session's", len(got.Task), got.Features)
			}
			resp, err := http.Get(srv.URL + "/api/demo/rows?code=" + o.JoinCode)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
				t.Fatalf("/api/demo/rows: %s, %q", resp.Status, resp.Header.Get("Content-Type"))
			}
			rows, refused, err := def.ReadCSV(resp.Body)
			want := min(a.sess.Rounds*a.sess.Batch, td.train.Len())
			if err != nil || len(refused) != 0 || rows.Len() != want {
				t.Errorf("demo rows: %d rows (want %d), refused %v, %v", rows.Len(), want, refused, err)
			}
			for _, path := range []string{"/api/demo/shard", "/api/demo/images"} {
				r, err := http.Get(srv.URL + path + "?code=" + o.JoinCode)
				if err != nil {
					t.Fatal(err)
				}
				r.Body.Close()
				if r.StatusCode == http.StatusOK {
					t.Errorf("%s served for a row task", path)
				}
			}
		})
	}
}

// TestTaskFile: -task-file serves a session of the teacher's task with
// no data (no demo shards, no evaluation); a malformed file and a
// -task-file beside -task are refused with clear errors.
func TestTaskFile(t *testing.T) {
	b, err := task.LookupBuiltin("tabular")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Def.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "task.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := parse([]string{"-task-file", path}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	td, err := loadTask(o)
	if err != nil {
		t.Fatal(err)
	}
	a, err := assembleSession(o, td, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if def, err := plan.SessionTask(a.sess); err != nil || def == nil || a.shards != 0 || a.sess.DemoShards {
		t.Errorf("task file session: task %v (%v), %d demo shards", def, err, a.shards)
	}
	if eval, err := evalSet(o, a, td, slog.New(slog.DiscardHandler)); err != nil || eval != nil {
		t.Errorf("task file: evaluation set of %d, %v; want none", eval.Len(), err)
	}
	if _, err := parse([]string{"-task-file", path, "-task", "text"}, io.Discard); err == nil {
		t.Error("-task-file with -task accepted")
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, raw[:len(raw)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	o.TaskFile = bad
	if _, err := loadTask(o); !errors.Is(err, task.ErrInvalid) || !strings.Contains(err.Error(), "-task-file") {
		t.Errorf("malformed task file: %v", err)
	}
}
