package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"browserfl/device"
	"browserfl/shared/dataset"
	"browserfl/shared/plan"
	"browserfl/shared/task"
	"browserfl/shared/wire"
)

// TestDeviceRecoversDamagedFiles: every file the native device keeps
// (shard.bin with its digest file, state.json) damaged as a crash or a
// bad disk leaves it (cut short, a byte changed, the digest file gone or
// cut, the exact "shard images length ... exceeds blob" of a shard cut by
// a kill before writes were atomic) is set aside and replaced: the shard
// fetched again from a real coordinator, the state started afresh with
// new demo data. Nothing damaged is trusted and nothing is fatal, except
// a damaged state with the owner's own rows (-rows), which stops with
// the reason.
func TestDeviceRecoversDamagedFiles(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	startCoordinator(t, ln)
	url := "ws://" + ln.Addr().String() + "/ws"
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cut := func(b []byte) []byte { return b[:len(b)/2] }
	flip := func(b []byte) []byte { c := bytes.Clone(b); c[len(c)-1] ^= 0x40; return c }
	for _, tc := range []struct {
		name   string
		file   string              // under the device's directory
		damage func([]byte) []byte // nil: remove the file
		rows   bool                // the owner's own rows (-rows)
		stops  string              // the device stops with this (empty: it recovers)
	}{
		{"shard cut short", "shard.bin", cut, false, ""},
		{"shard with a byte changed", "shard.bin", flip, false, ""},
		{"shard cut short, its digest file gone (kept before digests)", "shard.bin", cut, false, ""},
		{"digest file cut short", "shard.bin.sha256", cut, false, ""},
		{"digest file with a byte changed", "shard.bin.sha256", flip, false, ""},
		{"digest file gone, shard whole", "shard.bin.sha256", nil, false, ""},
		{"state cut short", "state.json", cut, false, ""},
		{"state with a byte changed", "state.json", flip, false, ""},
		{"state damaged, the owner's own rows", "state.json", cut, true, "move " + "DIR/state.json away"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			statePath := filepath.Join(dir, "state.json")
			// A device that has its shard and has saved its state.
			if _, _, err := localData(ctx, dir, "", url, "join-me", log); err != nil {
				t.Fatal(err)
			}
			store := device.NewFileStorage(statePath)
			if err := store.Save(ctx, []byte(`{"device_id":"dev-1","cursor":3}`)); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, tc.file)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if tc.damage == nil {
				err = os.Remove(path)
			} else {
				err = os.WriteFile(path, tc.damage(b), 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(tc.name, "digest file gone") && tc.file == "shard.bin" {
				os.Remove(path + ".sha256")
			}

			// The device starts again, as run does.
			rowsFile := ""
			if tc.rows {
				rowsFile = filepath.Join(dir, "mine.csv")
			}
			err = checkState(statePath, dir, rowsFile, log)
			if tc.stops != "" {
				if err == nil || !strings.Contains(err.Error(), strings.ReplaceAll(tc.stops, "DIR/state.json", statePath)) {
					t.Fatalf("start: %v; want it to stop saying %q", err, tc.stops)
				}
				return
			}
			if err != nil {
				t.Fatalf("checking the state: %v", err)
			}
			set, _, err := localData(ctx, dir, "", url, "join-me", log)
			if err != nil {
				t.Fatalf("a damaged %s is fatal: %v", tc.file, err)
			}
			if len(set.Samples) == 0 || set.Features != 1 {
				t.Fatalf("the data after recovery: %d samples of %d features", len(set.Samples), set.Features)
			}
			// What is kept now is whole: the shard matches its digest
			// and decodes, the state loads.
			blob, sidecar, err := readKept(filepath.Join(dir, "shard.bin"))
			if err != nil || !sidecar {
				t.Fatalf("the kept shard: sidecar %v, %v", sidecar, err)
			}
			if _, err := dataset.DecodeShard(blob, 10); err != nil {
				t.Errorf("the kept shard: %v", err)
			}
			rt, err := device.New(ctx, device.Config{URL: url, JoinCode: "join-me", Storage: store, Data: set.Samples})
			if err != nil {
				t.Fatalf("the device with its state after recovery: %v", err)
			}
			if st := rt.State(); strings.HasPrefix(tc.file, "state") && (st.DeviceID != "" || st.Cursor != 0) {
				t.Errorf("a damaged state was trusted: %+v", st)
			}
			// The damaged file is kept aside for a look, not lost.
			if tc.damage != nil {
				aside, _ := filepath.Glob(filepath.Join(dir, strings.TrimSuffix(tc.file, ".sha256")+".bad-*"))
				if len(aside) == 0 {
					t.Errorf("the damaged %s was not set aside", tc.file)
				}
			}
		})
	}
}

// TestDeviceRecoversDamagedRows: the demo rows a device keeps (rows.csv
// of a row task, with their digest) cut short or changed are set aside
// and fetched again from a real coordinator: every row comes back, none
// is lost to a cut line.
func TestDeviceRecoversDamagedRows(t *testing.T) {
	def, err := task.Parse([]byte(`{"format": "browserfl.task/v1", "name": "pets", "title": "Guess a pet",
		"about": "Pets from their weight.",
		"features": [{"name": "weight", "ask": "How heavy, in kg?", "kind": "number", "min": 0, "max": 80}],
		"label": {"name": "pet", "ask": "Which pet?", "values": ["cat", "dog"]}, "model": "logreg"}`))
	if err != nil {
		t.Fatal(err)
	}
	rows := task.Rows{}
	for i := range 200 {
		rows.Values = append(rows.Values, []string{strconv.Itoa(i % 80)})
		rows.Labels = append(rows.Labels, i%2)
	}
	train, err := def.Set("pets", rows)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := plan.WithTask(wire.SessionParams{Name: "pets", Algorithm: "nc", DeadlineMillis: 500, M: 4, Cohort: 2,
		Rounds: 5, Batch: 4, Clip: 1, Eta: 1, Rho: 1}, def)
	if err != nil {
		t.Fatal(err)
	}
	sess.DemoShards = true
	csv := func(part []int) ([]byte, error) {
		sub := task.Rows{}
		for _, j := range part {
			sub.Values, sub.Labels = append(sub.Values, rows.Values[j]), append(sub.Labels, rows.Labels[j])
		}
		var b bytes.Buffer
		err := def.WriteCSV(&b, sub)
		return b.Bytes(), err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveCoordinator(t, ln, sess, train, csv)
	url := "ws://" + ln.Addr().String() + "/ws"
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"cut in a line", func(b []byte) []byte { return b[:len(b)/2+1] }},
		{"a value changed", func(b []byte) []byte {
			c := bytes.Clone(b)
			i := bytes.IndexByte(c, '\n') + 1 // the first row's weight
			c[i] = '0' + ('9'-c[i]+1)%10
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			first, got, err := localData(ctx, dir, "", url, "join-me", log)
			if err != nil || got == nil {
				t.Fatalf("first start: task %v, %v", got, err)
			}
			path := filepath.Join(dir, "rows.csv")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(tc.damage(b), b) {
				t.Fatal("the damage changed nothing")
			}
			if err := os.WriteFile(path, tc.damage(b), 0o600); err != nil {
				t.Fatal(err)
			}
			again, _, err := localData(ctx, dir, "", url, "join-me", log)
			if err != nil {
				t.Fatalf("damaged rows are fatal: %v", err)
			}
			if len(again.Samples) != len(first.Samples) {
				t.Errorf("%d rows after recovery, want the %d of a whole shard", len(again.Samples), len(first.Samples))
			}
			if _, sidecar, err := readKept(path); err != nil || !sidecar {
				t.Errorf("the kept rows: sidecar %v, %v", sidecar, err)
			}
			if aside, _ := filepath.Glob(path + ".bad-*"); len(aside) != 1 {
				t.Errorf("set aside: %q, want the damaged file", aside)
			}
		})
	}
}

// TestKeepFailureIsPermanent: a shard or rows file the device cannot
// write in its folder (full, read-only, gone; here a folder that does not
// exist) is an error that stops the fetching at once (errPermanent) and
// names the folder, instead of a "coordinator not reachable" retried
// forever, each try fetching the whole shard again.
func TestKeepFailureIsPermanent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone", "shard.bin")
	for what, err := range map[string]error{"keep": keep(path, []byte("data"), ""), "digest": keepDigest(path, []byte("data"))} {
		if !errors.Is(err, errPermanent) || !strings.Contains(err.Error(), "-dir") {
			t.Errorf("%s into a folder that does not exist: %v, want a permanent error naming -dir", what, err)
		}
	}
	attempts := 0
	err := waitFor(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), "demo shard", func(context.Context) error {
		attempts++
		return keep(path, []byte("data"), "")
	})
	if !errors.Is(err, errPermanent) || attempts != 1 {
		t.Errorf("waitFor: %v after %d attempts, want the permanent error after 1", err, attempts)
	}
}
