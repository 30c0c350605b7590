package main

import (
	"bytes"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"browserfl"
	"browserfl/coordinator"
	"browserfl/coordinator/gate"
	"browserfl/coordinator/shards"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/dataset"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
	"browserfl/shared/plan"
	"browserfl/shared/task"
	"browserfl/shared/wire"
)

// rounds are the round timings from -deadline and -round-gap.
func (o options) rounds() (deadline, gap time.Duration, err error) {
	deadline, err = time.ParseDuration(o.Deadline)
	if err != nil || deadline <= 0 {
		return 0, 0, fmt.Errorf("-deadline %q: want a positive duration", o.Deadline)
	}
	gap, err = time.ParseDuration(o.RoundGap)
	if err != nil || gap < 0 {
		return 0, 0, fmt.Errorf("-round-gap %q: want a duration >= 0", o.RoundGap)
	}
	return deadline, gap, nil
}

// assembled is the session run serves, assembled from the options and
// the task's data.
type assembled struct {
	sess   wire.SessionParams // o.Session with the data's shape, labels, deadline and mode
	mdl    model.Model
	shards int // distinct demo shards (0: none)
}

// assembleSession completes o's session for the task (its shape and
// the model's dimension; a row task also names the model, the labels and
// travels in the session as its definition), the labels (unless the
// session names its own) and the round deadline, and checks it as a
// device will.
func assembleSession(o options, td taskData, deadline time.Duration) (assembled, error) {
	sess := o.Session
	sess.DeadlineMillis = int(deadline.Milliseconds())
	features, err := featureDim(sess.Transform, td) // before a task's session drops the transform
	if err != nil {
		return assembled{}, err
	}
	if td.def != nil {
		if sess.Labels != "" && sess.Labels != strings.Join(td.def.Label.Values, ",") {
			return assembled{}, fmt.Errorf("-labels %q: the task %s names its own labels", sess.Labels, td.def.Name)
		}
		if sess.SignalBound > 0 {
			return assembled{}, fmt.Errorf("-signal-bound: the honest devices' figures behind it were measured on the picture tasks, not on %s's rows (docs/security.md, \"An assumed signal bound\")", td.def.Name)
		}
		if sess, err = plan.WithTask(sess, td.def); err != nil {
			return assembled{}, err
		}
	}
	mdl, err := model.New(sess.Model, features, td.classes)
	if err != nil {
		return assembled{}, err
	}
	sess.Features, sess.Classes, sess.Dim = features, td.classes, mdl.Dim()
	if sess.Labels == "" {
		sess.Labels = td.labels
	}
	if err := algo.Validate(sess); err != nil {
		return assembled{}, err
	}
	sess.Trusted = algo.Trusted(sess)
	shardsN := o.DemoShards
	if shardsN == 0 {
		shardsN = 4 * sess.M
	}
	if td.train == nil {
		shardsN = 0 // a task without data (-task-file) has no demo shards
	}
	sess.DemoShards = shardsN > 0
	if sess.SignalBound > 0 && (shardsN <= 0 || !(o.DemoAlpha >= signalBoundAlpha)) {
		return assembled{}, fmt.Errorf("-signal-bound %v assumes every device trains on a shard of one dataset dealt "+
			"nearly iid: it needs the demo shards (-demo-shards >= 0) with -demo-alpha >= %v, not %v "+
			"(docs/security.md, \"An assumed signal bound\")", sess.SignalBound, signalBoundAlpha, o.DemoAlpha)
	}
	if err := wire.ValidateSession(sess); err != nil {
		return assembled{}, err
	}
	if _, err := plan.SessionTask(sess); err != nil {
		return assembled{}, err
	}
	if _, err := plan.SessionFeatures(sess); err != nil {
		return assembled{}, err
	}
	return assembled{sess: sess, mdl: mdl, shards: max(shardsN, 0)}, nil
}

// featureDim is the number of inputs the model of a session with
// transform kind (-features) reads: the task's own, or the transform's
// output dimension when the devices compute features of their pictures
// (plan.NewFeatures). Features are computed from pictures: not from a
// task's rows, and only from pictures of the transform's size.
func featureDim(kind string, td taskData) (int, error) {
	if kind == "" {
		return td.features, nil
	}
	f, err := plan.NewFeatures(kind)
	if err != nil {
		return 0, fmt.Errorf("-features: %w", err)
	}
	switch {
	case td.def != nil:
		return 0, fmt.Errorf("-features %s: features are computed from pictures, and the task %s is rows", kind, td.name)
	case td.features != f.Inputs():
		return 0, fmt.Errorf("-features %s: the transform reads pictures of %d values, the task %s has %d", kind, f.Inputs(), td.name, td.features)
	}
	return f.Dim(), nil
}

// signalBoundAlpha is the smallest demo-shard Dirichlet alpha with which
// the coordinator accepts -signal-bound: shards that skewed are iid for
// the assumption's purpose (docs/security.md, "An assumed signal bound",
// has the honest devices' figures at this alpha and at the default 0.5).
const signalBoundAlpha = 100

// taskData is what a session learns from: its shape and labels, the
// training set the demo shards come from and the test set it is
// evaluated on (both nil for a task without data), and, for a row task,
// its definition and training rows (the demo rows pages and native
// devices fetch as CSV).
type taskData struct {
	name              string
	features, classes int
	labels            string
	train             shards.Source
	test              func(n int) (dataset.Set, error) // the first n test samples
	testLen           int
	// testPics is a picture task's test set, kept compact: the
	// evaluation expands its first samples a batch at a time.
	testPics *dataset.Compact
	def      *task.Definition
	rows     task.Rows
	// close releases the picture sets' files (their pixels are on disk).
	close func()
}

// loadTask loads o's task: -task-file's definition (no training data:
// pages bring every row; test rows from -test-rows, if given), a built-in row task's rows, or a picture task's
// training and test sets, from -dataset's directory (the task's own
// if empty). -dataset none loads nothing: a 28x28, 10-class model
// without data (load tests: no demo shards, no evaluation, no labels).
func loadTask(o options) (taskData, error) {
	if o.TaskFile != "" {
		def, err := task.ReadFile(o.TaskFile)
		if err != nil {
			return taskData{}, fmt.Errorf("-task-file: %w", err)
		}
		td := taskData{name: def.Name, features: def.Dim(), classes: def.Classes(), def: def}
		if o.TestRows != "" {
			test, err := def.ReadSetFile(o.TestRows, def.Name+"-test")
			if err != nil {
				return taskData{}, fmt.Errorf("-test-rows: %w", err)
			}
			td.test, td.testLen = test.Take, test.Len()
		}
		return td, nil
	}
	if o.DatasetDir == "none" {
		none := &dataset.Compact{Features: 784, Classes: 10}
		return taskData{name: o.Task, features: 784, classes: 10, train: none, test: none.Head}, nil
	}
	named, err := task.Lookup(o.Task)
	if err != nil {
		return taskData{}, err
	}
	if b := named.Rows; b != nil {
		return loadRows(*b, o.DatasetDir)
	}
	// The pictures stay on disk, in an unlinked file of the data
	// directory: the demo shards and the evaluation set read the samples
	// they need (47 MB of Fashion-MNIST's training pixels would otherwise
	// be most of the process's memory).
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return taskData{}, err
	}
	train, test, err := named.Picture.LoadOnDisk(o.DatasetDir, o.DataDir)
	if err != nil {
		return taskData{}, err
	}
	return taskData{name: named.Picture.Name, features: train.Features, classes: train.Classes,
		labels: strings.Join(named.Picture.Labels, ","), train: train, test: test.Head, testLen: test.Len(), testPics: test,
		close: func() { train.Close(); test.Close() }}, nil
}

// loadRows loads a built-in row task's rows from dir, encoded only when
// asked for (task.RowSet: the demo shards are the rows as CSV, and the
// evaluation encodes its first -eval-samples test rows).
func loadRows(b task.Builtin, dir string) (taskData, error) {
	trainRows, testRows, err := b.LoadRows(dir)
	if err != nil {
		return taskData{}, err
	}
	train, err := b.Def.RowSet(b.Def.Name, trainRows)
	if err != nil {
		return taskData{}, err
	}
	test, err := b.Def.RowSet(b.Def.Name+"-test", testRows)
	if err != nil {
		return taskData{}, err
	}
	return taskData{name: b.Def.Name, features: b.Def.Dim(), classes: b.Def.Classes(),
		labels: strings.Join(b.Def.Label.Values, ","), train: train, test: test.Take, testLen: test.Len(),
		def: b.Def, rows: trainRows}, nil
}

// evaluation is a session's evaluation set: the first n pictures of a
// test set kept compact (one byte per pixel, on disk for the built-in
// picture tasks), expanded evalBatch samples at a time at each
// evaluation, or samples held as they are evaluated (the features of
// pictures, a row task's encoded rows).
type evaluation struct {
	pics    *dataset.Compact
	n       int
	samples []dataset.Sample
}

// evalBatch is how many pictures an evaluation expands to float32 at a
// time (0.8 MB for 28x28 pictures).
const evalBatch = 256

// Len returns the number of samples evaluated on (0 for nil).
func (e *evaluation) Len() int {
	switch {
	case e == nil:
		return 0
	case e.pics != nil:
		return e.n
	}
	return len(e.samples)
}

// evaluate returns m's accuracy and mean loss under w on e's samples,
// in their order (model.Evaluate of them all, bit for bit).
func (e *evaluation) evaluate(m model.Model, w []float64) (acc, loss float64, err error) {
	var t model.Tally
	if e.pics == nil {
		t.Add(m, w, e.samples)
	}
	idx := make([]int, 0, evalBatch)
	for i := 0; e.pics != nil && i < e.n; i += evalBatch {
		idx = idx[:0]
		for j := i; j < min(i+evalBatch, e.n); j++ {
			idx = append(idx, j)
		}
		set, err := e.pics.Subset(idx)
		if err != nil {
			return 0, 0, fmt.Errorf("evaluation set: %w", err)
		}
		t.Add(m, w, set.Samples)
	}
	acc, loss = t.Result()
	return acc, loss, nil
}

// evalSet returns the evaluation set: a fixed subset of the test set
// (its first -eval-samples samples); a picture task's stays compact (one
// byte per pixel, on disk) and is expanded a batch at a time at each
// evaluation, as its training set is for the demo shards. A task
// without data has none (nil: no evaluation). When the session's model
// reads features (a.sess.Transform), the set holds the test pictures'
// features, computed by the same function as the devices'
// (plan.Features).
func evalSet(o options, a assembled, td taskData, log *slog.Logger) (*evaluation, error) {
	if td.test == nil {
		if o.EvalEvery > 0 {
			log.Info("no server-side evaluation: the task has no test rows (-task-file takes them with -test-rows)", "task", td.name)
		}
		return nil, nil
	}
	evalN := td.testLen
	if o.EvalSamples > 0 {
		evalN = min(o.EvalSamples, evalN)
	}
	f, err := plan.SessionFeatures(a.sess)
	if err != nil {
		return nil, err
	}
	var e *evaluation
	switch {
	case f != nil && o.EvalEvery <= 0:
		return nil, nil // pictures the model cannot read, and no evaluation
	case f == nil && td.testPics != nil:
		e = &evaluation{pics: td.testPics, n: min(evalN, td.testPics.Len())}
	default:
		evalData, err := td.test(evalN)
		if err != nil {
			return nil, err
		}
		set := evalData.Samples
		if f != nil {
			if set, err = f.Samples(set, runtime.GOMAXPROCS(0)); err != nil {
				return nil, fmt.Errorf("evaluation set: %w", err)
			}
		}
		e = &evaluation{samples: set}
	}
	if e.Len() == 0 {
		return nil, nil
	}
	if o.EvalEvery > 0 {
		log.Info("server-side evaluation", "every_rounds", o.EvalEvery, "test_samples", e.Len(), "test_set", td.testLen)
	}
	return e, nil
}

// template returns the host's Config template for every session: a's
// session and model, the round timings, the limits and the gate from o,
// and the evaluation on evalSet. An empty evalSet means no evaluation,
// and a row task without test rows says so (coordinator.NoTestRows).
func template(o options, a assembled, gap time.Duration, evalSet *evaluation, log *slog.Logger) func() (coordinator.Config, error) {
	evalModel := a.mdl.Clone()
	evaluate := func(w []float64) (float64, float64, error) {
		return evalSet.evaluate(evalModel, w)
	}
	evalEvery, note := o.EvalEvery, ""
	if evalSet.Len() == 0 {
		evaluate, evalEvery = nil, 0
		if a.sess.Task != "" {
			note = coordinator.NoTestRows
		}
	}
	return func() (coordinator.Config, error) {
		return coordinator.Config{
			Session: a.sess, Lobby: o.Lobby, MinDevices: o.MinDevices,
			NewServer: func(final wire.SessionParams) (optim.Server, error) {
				// The model of the final session: a teacher's task
				// (plan.WithTask) has its own shape.
				mdl, err := model.New(final.Model, final.Features, final.Classes)
				if err != nil {
					return nil, err
				}
				x0 := make([]float64, mdl.Dim())
				model.Init(mdl, x0, 1)
				return optim.NewServer(final, x0, crand.Reader)
			},
			RoundGap: gap, EvalEvery: evalEvery, EvalSamples: evalSet.Len(), EvalNote: note, Logger: log, AllowedOrigins: o.Origins,
			Limits: wsconn.Limits{MaxDevices: o.MaxDevices, MsgRate: o.MsgRate},
			Gate: gate.Config{RegisterRate: o.RegisterRate, RegisterGlobalRate: o.RegisterGlobalRate,
				MaxInactive: o.MaxInactive, PreHelloPerAddress: o.PreHelloPerAddress, TrustedProxies: o.TrustProxy,
				MetricsToken: o.MetricsToken},
			Evaluate: evaluate,
		}, nil
	}
}

// demoShards returns the demo shards (nil without any). They size
// themselves by the rounds the current session has left: committed
// reads it from the host. A row task's shards are served as CSV rows
// (the task's WriteCSV), a picture task's as pictures.
func demoShards(o options, a assembled, td taskData, committed func() int, log *slog.Logger) (*shards.Set, error) {
	if a.shards <= 0 || td.train == nil {
		return nil, nil
	}
	cfg := shards.Config{Classes: td.classes, Rounds: a.sess.Rounds, Batch: a.sess.Batch,
		Alpha: o.DemoAlpha, Seed: 1, Max: a.shards, Committed: committed}
	if td.def != nil {
		def, rows := td.def, td.rows
		cfg.CSV = func(part []int) ([]byte, error) {
			sub := task.Rows{Values: make([][]string, len(part)), Labels: make([]int, len(part))}
			for i, j := range part {
				sub.Values[i], sub.Labels[i] = rows.Values[j], rows.Labels[j]
			}
			var b bytes.Buffer
			err := def.WriteCSV(&b, sub)
			return b.Bytes(), err
		}
	}
	replay, onNew, err := shardLog(o, td, cfg, log)
	if err != nil {
		return nil, err
	}
	cfg.Replay, cfg.OnNew = replay, onNew
	set, err := shards.New(td.train, cfg)
	if err != nil {
		// A log that no longer fits (edited, another training set):
		// start again without it.
		log.Warn("demo shards: the record of earlier shards does not replay; starting afresh", "err", err)
		if err := os.Remove(shardLogPath(o, td, cfg)); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		cfg.Replay = nil
		if set, err = shards.New(td.train, cfg); err != nil {
			return nil, err
		}
	}
	size := dataset.PageShardSize(a.sess.Rounds, a.sess.Batch, 0, td.train.Len())
	log.Info("demo shards (demo only)", "task", td.name, "train", td.train.Len(), "shard_samples", size,
		"disjoint_shards", td.train.Len()/max(size, 1), "max_shards", a.shards)
	return set, nil
}

// index returns the page served at /: -index's file, or the embedded one.
func (o options) index() ([]byte, error) {
	if o.Index == "" {
		return browserfl.IndexHTML, nil
	}
	b, err := os.ReadFile(o.Index)
	if err != nil {
		return nil, fmt.Errorf("-index: %w", err)
	}
	return b, nil
}

// shardLogPath is the file in the data directory that records the sizes
// of the demo shards handed out, for shards.Config.Replay; its name
// carries what the shards depend on, so another training set or plan
// starts a record of its own.
func shardLogPath(o options, td taskData, cfg shards.Config) string {
	name := fmt.Sprintf("demo-shards-%s-n%d-T%d-b%d-a%g-s%d", td.name, td.train.Len(), cfg.Rounds, cfg.Batch, cfg.Alpha, cfg.Seed)
	return filepath.Join(o.DataDir, strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, name))
}

// shardLog reads the sizes of the demo shards an earlier run handed out
// (one decimal a line; at most cfg.Max) and returns them with the
// function that records each new one, so a page that fetches the rest of
// its shard after a restart gets the rest of the same shard.
func shardLog(o options, td taskData, cfg shards.Config, log *slog.Logger) ([]int, func(int) error, error) {
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, nil, err
	}
	return openShardLog(shardLogPath(o, td, cfg), cfg.Max, o.Reset, log)
}

// openShardLog is shardLog on the file at path: reset removes it first (a
// new session: its pages start on new shards). A last line without its
// newline is a record cut short by a crash: the shard was never handed
// out (onNew returns, synced, before any page sees it), so it is dropped
// and the file cut back to its last whole line. Any other damage starts
// the record afresh.
func openShardLog(path string, max int, reset bool, log *slog.Logger) ([]int, func(int) error, error) {
	if reset {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return nil, nil, err
		}
	}
	var sizes []int
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, err
	}
	if whole := bytes.LastIndexByte(b, '\n') + 1; whole < len(b) {
		log.Warn("demo shards: the record's last line was cut short; dropping it", "file", path, "line", string(b[whole:]))
		if err := os.Truncate(path, int64(whole)); err != nil {
			return nil, nil, err
		}
		b = b[:whole]
	}
	for _, line := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(line)
		if err != nil || n < 1 || len(sizes) >= max {
			log.Warn("demo shards: the record of earlier shards is damaged; starting afresh", "file", path)
			sizes = nil
			if err := os.Remove(path); err != nil {
				return nil, nil, err
			}
			break
		}
		sizes = append(sizes, n)
	}
	onNew := func(n int) error {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("recording demo shard size %d in %s: %w", n, path, err)
		}
		before, err := f.Seek(0, io.SeekEnd)
		if err == nil {
			_, err = fmt.Fprintf(f, "%d\n", n)
		}
		if err == nil {
			// On disk before the page gets the shard: a restart
			// replays every shard a page may hold.
			err = f.Sync()
		}
		if err != nil && before >= 0 {
			// The shard is refused (the page asks again): no part of
			// its line may stay for the next one to be glued onto.
			if terr := f.Truncate(before); terr != nil {
				err = errors.Join(err, terr)
			}
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("recording demo shard size %d in %s: %w", n, path, err)
		}
		return nil
	}
	return sizes, onNew, nil
}
