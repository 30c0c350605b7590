package main

import (
	crand "crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"browserfl"
	"browserfl/coordinator"
	"browserfl/coordinator/gate"
	"browserfl/coordinator/shards"
	"browserfl/coordinator/wsconn"
	devrt "browserfl/device"
	"browserfl/shared/dataset"
	"browserfl/shared/model"
	"browserfl/shared/optim"
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

// assembleSession completes o's session for the task's training set
// (its shape and the model's dimension), its labels (unless the session
// names its own) and the round deadline, and checks it as a device will.
func assembleSession(o options, train *dataset.Compact, labels string, deadline time.Duration) (assembled, error) {
	sess := o.Session
	mdl, err := model.New(sess.Model, train.Features, train.Classes)
	if err != nil {
		return assembled{}, err
	}
	sess.Features, sess.Classes, sess.Dim = train.Features, train.Classes, mdl.Dim()
	if sess.Labels == "" {
		sess.Labels = labels
	}
	sess.DeadlineMillis = int(deadline.Milliseconds())
	p := devrt.Params(sess)
	if err := p.Validate(); err != nil {
		return assembled{}, err
	}
	sess.Trusted = p.Trusted()
	shardsN := o.DemoShards
	if shardsN == 0 {
		shardsN = 4 * sess.M
	}
	sess.DemoShards = shardsN > 0
	if sess.SignalBound > 0 && (shardsN <= 0 || !(o.DemoAlpha >= signalBoundAlpha)) {
		return assembled{}, fmt.Errorf("-signal-bound %v assumes every device trains on a shard of one dataset dealt "+
			"nearly iid: it needs the demo shards (-demo-shards >= 0) with -demo-alpha >= %v, not %v "+
			"(docs/security.md, \"An assumed signal bound\")", sess.SignalBound, signalBoundAlpha, o.DemoAlpha)
	}
	if err := sess.Validate(); err != nil {
		return assembled{}, err
	}
	return assembled{sess: sess, mdl: mdl, shards: max(shardsN, 0)}, nil
}

// signalBoundAlpha is the smallest demo-shard Dirichlet alpha with which
// the coordinator accepts -signal-bound: shards that skewed are iid for
// the assumption's purpose (docs/security.md, "An assumed signal bound",
// has the honest devices' figures at this alpha and at the default 0.5).
const signalBoundAlpha = 100

// loadTask loads the task's training and test sets from dir (the task's
// own directory if empty) and returns its class names for the session's
// Labels. dir "none" loads nothing: a 28x28, 10-class model without data
// (load tests: no demo shards, no evaluation, no labels).
func loadTask(name, dir string) (train, test *dataset.Compact, labels string, err error) {
	if dir == "none" {
		return &dataset.Compact{Features: 784, Classes: 10}, &dataset.Compact{Features: 784, Classes: 10}, "", nil
	}
	task, err := dataset.LookupTask(name)
	if err != nil {
		return nil, nil, "", err
	}
	if train, test, err = task.LoadCompact(dir); err != nil {
		return nil, nil, "", err
	}
	return train, test, strings.Join(task.Labels, ","), nil
}

// evalSet returns the evaluation set: a fixed subset of the test set
// (its first -eval-samples samples), the only part of the data held as
// float32; the training set stays compact (one byte per pixel) and the
// demo shards are expanded from it one at a time.
func evalSet(o options, test *dataset.Compact, log *slog.Logger) ([]dataset.Sample, error) {
	evalN := test.Len()
	if o.EvalSamples > 0 {
		evalN = min(o.EvalSamples, evalN)
	}
	evalData, err := test.Head(evalN)
	if err != nil {
		return nil, err
	}
	set := evalData.Samples
	if o.EvalEvery > 0 && len(set) > 0 {
		log.Info("server-side evaluation", "every_rounds", o.EvalEvery, "test_samples", len(set), "test_set", test.Len())
	}
	return set, nil
}

// template returns the host's Config template for every session: a's
// session and model, the round timings, the limits and the gate from o,
// and the evaluation on evalSet.
func template(o options, a assembled, gap time.Duration, evalSet []dataset.Sample, log *slog.Logger) func() (coordinator.Config, error) {
	evalModel := a.mdl.Clone()
	return func() (coordinator.Config, error) {
		return coordinator.Config{
			Session: a.sess, Lobby: o.Lobby, MinDevices: o.MinDevices,
			NewServer: func(final wire.SessionParams) (optim.Server, error) {
				x0 := make([]float64, a.mdl.Dim())
				model.Init(a.mdl, x0, 1)
				return optim.NewServer(devrt.Params(final), x0, crand.Reader)
			},
			RoundGap: gap, EvalEvery: o.EvalEvery, EvalSamples: len(evalSet), Logger: log, AllowedOrigins: o.Origins,
			Limits: wsconn.Limits{MaxDevices: o.MaxDevices, MsgRate: o.MsgRate},
			Gate: gate.Config{RegisterRate: o.RegisterRate, RegisterGlobalRate: o.RegisterGlobalRate,
				MaxInactive: o.MaxInactive, PreHelloPerAddress: o.PreHelloPerAddress, TrustedProxies: o.TrustProxy,
				MetricsToken: o.MetricsToken},
			Evaluate: func(w []float64) (float64, float64, error) {
				acc, loss := model.Evaluate(evalModel, w, evalSet)
				return acc, loss, nil
			},
		}, nil
	}
}

// demoShards returns the demo shards (nil without any). They size
// themselves by the rounds the current session has left: committed
// reads it from the host.
func demoShards(o options, a assembled, train *dataset.Compact, committed func() int, log *slog.Logger) (*shards.Set, error) {
	if a.shards <= 0 {
		return nil, nil
	}
	shards, err := shards.New(train, shards.Config{Classes: train.Classes, Rounds: a.sess.Rounds, Batch: a.sess.Batch,
		Alpha: o.DemoAlpha, Seed: 1, Max: a.shards, Committed: committed})
	if err != nil {
		return nil, err
	}
	size := dataset.PageShardSize(a.sess.Rounds, a.sess.Batch, 0, train.Len())
	log.Info("demo shards (demo only)", "task", o.Task, "train", train.Len(), "shard_samples", size,
		"disjoint_shards", train.Len()/max(size, 1), "max_shards", a.shards)
	return shards, nil
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
