// Command device is a native headless device: the same device runtime as
// the browser page (package device), with its own local data shard and a
// persistent state file. It joins a session, trains until the session
// ends, and can be stopped and restarted at any time (it resumes with its
// device id, secret and pending round from the state file).
//
//	device -url ws://localhost:8080/ws -code ABC123 -dir ./dev1
//
// The owner's budget is the page's default, epsilon 8 at delta 1e-5
// (-budget, -budget-delta); -unlimited removes it, and -allow-trusted and
// -allow-nonprivate accept trusted-server and non-private sessions.
//
// For a session that learns pictures, the shard is read from
// DIR/shard.bin; if missing or damaged, the coordinator's demo shard
// endpoint is asked (demo only: a real device has its own data) and the
// shard is kept there. Every file it writes is replaced atomically and
// checked when read; a damaged one is set aside, never trusted (files.go). For a session that learns a row task (coordinator -task tabular,
// text or -task-file; the task comes with the session's parameters from
// /api/session), the rows are read from the CSV file -rows (the device's
// own rows: the first line names the task's columns; lines that do not
// fit the task are logged with their line numbers and left out), or else
// from DIR/rows.csv, or else from the coordinator's demo rows
// (/api/demo/rows), kept there:
//
//	device -url ws://localhost:8080/ws -code ABC123 -dir ./dev1 -rows my-diamonds.csv
//
// A coordinator that is not up yet is asked again with jittered
// exponential backoff (0.5 s doubling up to 30 s, each attempt logged) until it answers or the device is stopped
// (Ctrl-C); a wrong join code or a coordinator without demo shards stops
// it at once. Once it has its data, the runtime reconnects the same way.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"browserfl/device"
	"browserfl/shared/dataset"
	"browserfl/shared/task"
	"browserfl/shared/wire"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		// Errors of package device carry its name already.
		fmt.Fprintln(os.Stderr, "device:", strings.TrimPrefix(err.Error(), "device: "))
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("device", flag.ContinueOnError)
	fs.SetOutput(stderr)
	wsURL := fs.String("url", "ws://localhost:8080/ws", "coordinator websocket URL")
	code := fs.String("code", "", "session join code (required)")
	dir := fs.String("dir", "device-state", "directory for the state file and the data shard")
	policy := device.PolicyFlags(fs)
	origin := fs.String("origin", "", "Origin header to send (if the coordinator requires one)")
	nickname := fs.String("nickname", "", "optional nickname for the teacher's lobby list (letters, digits, space, - and _, with a letter or digit; at most 24)")
	rowsFile := fs.String("rows", "", "a CSV file of this device's own rows, for a session that learns a row task (first line: the task's column names)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkAddress(*wsURL, *code); err != nil {
		return err
	}
	// Before any data is fetched: the coordinator would refuse it at hello.
	if err := wire.CheckNickname(*nickname); err != nil {
		return fmt.Errorf("-nickname %q: %w", *nickname, err)
	}
	pol, err := policy()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	release, err := openDir(*dir, log)
	if err != nil {
		return err
	}
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	statePath := filepath.Join(*dir, "state.json")
	if err := checkState(statePath, *dir, *rowsFile, log); err != nil {
		return err
	}
	set, def, err := localData(ctx, *dir, *rowsFile, *wsURL, *code, log)
	if errors.Is(err, context.Canceled) {
		log.Info("stopped by its owner before the coordinator answered", "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	log.Info("local data", "samples", len(set.Samples), "features", set.Features)

	cfg := device.Config{
		URL: *wsURL, JoinCode: *code, Storage: device.NewFileStorage(statePath),
		Data: set.Samples, Task: def, Origin: *origin, Nickname: *nickname,
		OnEvent: func(e device.Event) {
			logEvent(log, e)
		},
	}
	cfg.SetPolicy(pol)
	rt, err := device.New(ctx, cfg)
	if err != nil {
		return err
	}
	// The first SIGINT or SIGTERM makes the device leave (it tells the
	// coordinator, which stops sampling it, and closes the connection);
	// a second one stops it at once.
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go leaveOnSignal(ctx, sig, rt, cancel, log)
	err = rt.Run(ctx)
	logLeft(log, rt, err)
	if errors.Is(err, context.Canceled) || errors.Is(err, device.ErrLeft) ||
		errors.Is(err, device.ErrDataUsedUp) || errors.Is(err, device.ErrBudgetSpent) {
		return nil
	}
	return err
}

// localData returns the device's data: for a session that learns a row
// task, the rows of -rows (or the demo rows) encoded with the session's
// task, which it also returns; for a picture session, the shard. The
// session is asked for unless a picture shard is already kept in dir and
// -rows is not set (so a picture device starts from its kept shard).
func localData(ctx context.Context, dir, rowsFile, wsURL, code string, log *slog.Logger) (dataset.Set, *task.Definition, error) {
	_, err := os.Stat(filepath.Join(dir, "shard.bin"))
	var def *task.Definition
	if rowsFile != "" || err != nil {
		if def, err = sessionTask(ctx, wsURL, code, log); err != nil {
			return dataset.Set{}, nil, err
		}
	}
	if def != nil {
		set, err := readRows(ctx, def, rowsFile, dir, wsURL, code, log)
		return set, def, err
	}
	if rowsFile != "" {
		return dataset.Set{}, nil, fmt.Errorf("-rows %s: the session learns pictures, not rows", rowsFile)
	}
	blob, err := readShard(ctx, dir, wsURL, code, log)
	if err != nil {
		return dataset.Set{}, nil, err
	}
	set, err := dataset.DecodeShard(blob, 10)
	return set, nil, err
}

// leaveOnSignal makes the device leave at the first signal on sig and
// stops it (cancel) at the second.
func leaveOnSignal(ctx context.Context, sig <-chan os.Signal, rt *device.Runtime, cancel context.CancelFunc, log *slog.Logger) {
	select {
	case <-sig:
	case <-ctx.Done():
		return
	}
	log.Info("stopping: leaving the session")
	rt.Leave(wire.LeaveStopped)
	select {
	case <-sig:
		cancel()
	case <-ctx.Done():
	}
}
