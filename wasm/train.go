//go:build js && wasm

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall/js"
	"time"

	"browserfl/device"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/shared/privacy"
	"browserfl/shared/wire"
	"browserfl/wasm/bridge"
	"browserfl/wasm/idb"
	"browserfl/wasm/jsw"
	"browserfl/wasm/local"
	"browserfl/wasm/owner"
	"browserfl/wasm/socket"
	"browserfl/wasm/ui"
	"browserfl/wasm/yield"
)

// keyDevice holds the device runtime's state blob (device id and secret,
// the algorithm's state with Y_i seed, N_i, ledger and residual, the
// pending round, the data cursor). It is written in one IndexedDB
// transaction, so it is always the previous or the new blob.
const keyDevice = "dev/state"

// idbStorage is device.Storage on the page's IndexedDB store; each save
// is measured ("fl-save", in the page's timeline).
type idbStorage struct {
	st   *idb.Store
	port *port
}

// Load implements device.Storage.
func (s idbStorage) Load(ctx context.Context) ([]byte, error) {
	b, err := s.st.Get(ctx, keyDevice)
	if errors.Is(err, idb.ErrNotFound) {
		return nil, nil
	}
	return b, err
}

// Save implements device.Storage: one durable transaction.
func (s idbStorage) Save(ctx context.Context, b []byte) error {
	t0 := jsw.Now()
	defer s.port.measure("fl-save", t0)
	return s.st.Put(ctx, map[string][]byte{keyDevice: b})
}

// trainer runs the device runtime for this page and mirrors its events
// into the training view.
type trainer struct {
	a      *app
	rt     *device.Runtime
	ctx    context.Context
	cancel context.CancelFunc

	// ran is closed when the runtime has stopped; done once its last word
	// (final) is on the screen after every event before it, so that the
	// rounds it counts are all the rounds the events counted.
	ran, done chan struct{}
	final     func(*ui.State) // set under mu before ran is closed (nil: nothing more to say)
	ended     bool            // set under mu before ran is closed: the session itself ended

	mu sync.Mutex
	// figs is the session's figures (device.SessionFigures) for figsFor
	// at the owner's delta, derived once: for a shared-noise session
	// they take seconds in the Worker, where Go runs one goroutine at a
	// time, and the runtime could not answer a round's secure
	// aggregation step meanwhile.
	figs       *plan.Figures
	figsErr    error
	figsFor    wire.SessionParams
	x          []float64 // the latest global model fetched (for "try the model")
	modelRound int       // the round x is from
	committed  int       // the last committed round /api/progress gave
	stepMillis float64   // time of the latest Prepare
	bytesSent  int64     // update frames prepared for sending, in bytes
	events     []queued  // runtime events not yet published, in order
	sent       ui.Sent   // the pictures of the latest release prepared
	// firstSent is the first round this page sent an update for in this
	// visit (0: none, or sent before a reload), published the latest
	// round the session has committed, as far as the page knows: in a
	// trusted session everyone but the server sees this page's updates
	// in the rounds published from firstSent on.
	firstSent, published int

	wake chan struct{} // an event was queued

	// samples is how many samples the device holds (the wasm/yield
	// wrapper's single-pass check; topUpDemo adds to it).
	samples atomic.Int64
	// demoHeld is how many demo samples lead the device's data (what
	// the demo source held when it started, and the chunks added since).
	demoHeld atomic.Int64
	// moreDemo says more of the demo shard is on its way (topUpDemo):
	// a device whose samples are used up waits for them
	// (device.Config.MoreData) instead of leaving.
	moreDemo atomic.Bool

	// This device's charge in the owner's ledger (nil when the device
	// trains on the demo shard only, or the charge is settled) and what
	// the owner's data spent in other sessions (zCDP rho).
	owner       *owner.Charge
	spentBefore privacy.Spent
}

// startTraining shows the training view and starts the device runtime
// (again, with the data stored now, if an earlier one has stopped).
func (a *app) startTraining() {
	old := a.trainer
	if old != nil && !old.stopped() {
		a.update(func(s *ui.State) { s.Screen = ui.ScreenTrain; s.Error = "" })
		return
	}
	if old != nil {
		old.cancel() // its progress poll
	}
	// The screen changes to training once the runtime has loaded its
	// saved state (run, shown): the meter then shows the saved figure at
	// once, never a 0 that is not true.
	a.update(func(s *ui.State) {
		s.Error = ""
		s.Data.DrawHint = ""
		if s.Screen == ui.ScreenData {
			s.Data.Busy = "Starting…"
		}
		s.Train.EpsBudget = a.consent.Budget
		s.Train.Delta = a.delta
		s.Train.Conn = "connecting"
		s.Train.Status = "Connecting to the class server…"
		s.Train.Detail = ""
		s.Train.Done = false
		s.Train.UsedUp = false
	})
	a.port.mark("fl-train")
	ctx, cancel := context.WithCancel(a.ctx)
	t := &trainer{a: a, ctx: ctx, cancel: cancel, ran: make(chan struct{}), done: make(chan struct{}), wake: make(chan struct{}, 1)}
	if old != nil {
		old.mu.Lock()
		t.x, t.modelRound, t.committed = old.x, old.modelRound, old.committed
		old.mu.Unlock()
	}
	a.trainer = t
	go t.run()
	go t.publishEvents()
	go t.pollProgress()
	go t.topUpDemo()
}

func wsURL(base string) string {
	switch {
	case strings.HasPrefix(base, "https://"):
		return "wss://" + strings.TrimPrefix(base, "https://") + "/ws"
	case strings.HasPrefix(base, "http://"):
		return "ws://" + strings.TrimPrefix(base, "http://") + "/ws"
	}
	return base + "/ws"
}

func (t *trainer) run() {
	defer close(t.ran)
	a := t.a
	data := a.lib.All().Samples
	t.samples.Store(int64(len(data)))
	demo, total := a.lib.DemoSize()
	t.demoHeld.Store(int64(demo))
	t.moreDemo.Store(demo > 0 && demo < total)
	spent, err := t.charge(t.ctx)
	if err != nil {
		a.update(func(s *ui.State) {
			shown(s)
			s.Train.Done, s.Train.Conn = true, "stopped"
			s.Train.Status = "This page will not train on your data in this session: " + err.Error()
		})
		return
	}
	rt, err := device.New(t.ctx, device.Config{
		Transport: socket.Transport{URL: wsURL(a.base)},
		JoinCode:  a.code,
		Nickname:  a.consent.Nickname,
		Storage:   idbStorage{a.store, a.port},
		Data:      data,
		Task:      a.task,
		// The owner's budget, read at the owner's delta, less what the
		// owner's data spent in earlier sessions.
		Budget: plan.Budget{Epsilon: a.consent.Budget, Delta: a.delta},
		Spent:  spent,
		// The owner saw the mode on the consent screen: a trusted-server
		// session is joined only if that is what they agreed to.
		AllowTrusted: a.consent.Trusted,
		OnEvent:      t.onEvent,
		MoreData:     t.moreDemo.Load,
		NewDevice:    yield.Wrap(t.ctx, a.port.measure, t.samples.Load, device.WatchPrepared(device.DefaultNewDevice, t.watch), t.prepared),
	})
	if err != nil {
		a.update(shown)
		a.fail("Device", err)
		return
	}
	t.mu.Lock()
	t.rt = rt
	t.mu.Unlock()
	// The saved figures, before anything is sent or received.
	pr, joined, st := t.figures()
	a.update(func(s *ui.State) {
		shown(s)
		showPrivacy(s, pr)
		s.Train.Joined, s.Train.Included = joined, st.Included
		s.Data.Used = min(st.Cursor, s.Data.Count)
	})
	err = rt.Run(t.ctx)
	if err == nil {
		t.settle(a.ctx) // the session ended: no more releases
	}
	// The last word counts what the events before it counted: it is
	// shown after them (publishEvents).
	included := rt.State().Included
	t.mu.Lock()
	t.final = func(s *ui.State) {
		s.Train.Included = included
		s.Stopped(err)
	}
	t.ended = err == nil
	t.mu.Unlock()
}

// shown moves the page to the training screen (from the data screen,
// or from loading after a reload).
func shown(s *ui.State) {
	s.Screen = ui.ScreenTrain
	s.Data.Busy = ""
}

// runtime returns the device runtime once it is built (nil before).
func (t *trainer) runtime() *device.Runtime {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rt
}

// stopped reports whether the runtime has stopped.
func (t *trainer) stopped() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// prepared records the local step time and the bytes of the update
// about to be sent (called from inside the runtime: no runtime calls).
func (t *trainer) prepared(millis float64, frameBytes int) {
	t.mu.Lock()
	t.stepMillis = millis
	t.bytesSent += int64(frameBytes)
	t.mu.Unlock()
}

// watch receives each release the device half prepares
// (device.WatchPrepared), inside the runtime's lock: it draws the
// pictures of "what your phone sent" and keeps them until the update is
// sent (publish shows them with EventSent of that round). The clean
// estimate stays in this worker's memory and the page's.
func (t *trainer) watch(pr device.Prepared) {
	p := t.a.params
	row, perClass, clean, noisy, err := local.UpdatePictures(p.Model, p.Classes, pr.Clean, pr.Sent)
	if err != nil {
		return // a model without pictures: nothing to show
	}
	label := ""
	if names := ui.LabelsOf(p.LabelNames()); perClass && row < len(names) {
		label = names[row]
	}
	t.mu.Lock()
	t.sent = ui.Sent{Round: pr.T, Label: label, Clean: clean, Noisy: noisy}
	t.mu.Unlock()
}

// onEvent runs synchronously inside the runtime (its lock held): it must
// not call back into the runtime. It records what it can and queues the
// event for publishEvents, which shows the events in the order they
// happened (one goroutine per event let a later "included" be shown
// before the "sent" it follows, leaving "Sent a noisy update" on screen).
func (t *trainer) onEvent(e device.Event) {
	t.mu.Lock()
	switch e.Kind {
	case device.EventSent:
		if t.firstSent == 0 {
			t.firstSent = e.T
		}
	case device.EventIncluded:
		t.published = max(t.published, e.T)
	}
	t.events = append(t.events, queued{e, t.stepMillis, t.bytesSent})
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// queued is an event with the step time and bytes sent when it happened.
type queued struct {
	e          device.Event
	stepMillis float64
	bytesSent  int64
}

// publishEvents publishes the queued events in order until the runtime
// has stopped and the queue is empty; then the runtime's last word.
func (t *trainer) publishEvents() {
	defer close(t.done)
	for {
		t.mu.Lock()
		q := t.events
		t.events = nil
		t.mu.Unlock()
		for _, ev := range q {
			t.publish(ev.e, ev.stepMillis, ev.bytesSent)
		}
		if len(q) > 0 {
			continue
		}
		select {
		case <-t.wake:
		case <-t.ran:
			t.mu.Lock()
			empty, final := len(t.events) == 0, t.final
			t.mu.Unlock()
			if empty {
				if final != nil {
					t.a.update(final)
				}
				return
			}
		}
	}
}

// figures reads the runtime's ledger (once the runtime has released
// its lock): what this page has spent and the most this session can take
// it to, as the owner sees them (plan.Budget.ProgressOf the session's
// figures, derived once: epsilon at the
// owner's delta, with what the owner's data spent before), the releases
// made, and the runtime's state. In a trusted session the device charges
// nothing (the server adds the noise), and what it has spent against
// everyone but the server is what the rounds published since its first
// update carry (plan.Figures.Published); after a reload, when that round
// is not known, every published round is counted (never less).
func (t *trainer) figures() (pr plan.Progress, joined int, st device.State) {
	a := t.a
	rt := t.runtime()
	if rt == nil {
		return pr, 0, st
	}
	st = rt.State()
	sess := a.params
	if st.Session != nil {
		sess = *st.Session // the final parameters, from the teacher's Start on
	}
	var ledger privacy.Spent
	if acc, ok := rt.Algorithm().(optim.Accountant); ok {
		l := acc.Ledger()
		ledger = l.Spent()
		joined = acc.Participations()
	}
	releases := joined
	f, err := t.sessionFigures(sess)
	if err != nil {
		return pr, joined, st
	}
	if f.Protection() == plan.ProtectionServer {
		t.mu.Lock()
		n := 0
		switch {
		case t.firstSent > 0:
			n = t.published - t.firstSent + 1
		case joined > 0:
			n = t.published
		}
		t.mu.Unlock()
		if ledger, err = f.Published(n); err != nil {
			return pr, joined, st
		}
		releases = min(max(n, 0), f.WorstReleases)
	}
	owner := plan.Budget{Epsilon: a.consent.Budget, Delta: a.delta}
	if p, err := owner.ProgressOf(f, t.spentBefore, ledger, releases); err == nil {
		pr = p
	}
	return pr, joined, st
}

// sessionFigures returns device.SessionFigures(sess, the owner's
// delta), derived once per session (trainer.figs).
func (t *trainer) sessionFigures(sess wire.SessionParams) (plan.Figures, error) {
	t.mu.Lock()
	if t.figs != nil && t.figsFor == sess {
		f, err := *t.figs, t.figsErr
		t.mu.Unlock()
		return f, err
	}
	t.mu.Unlock()
	f, err := device.SessionFigures(sess, t.a.delta)
	t.mu.Lock()
	t.figs, t.figsErr, t.figsFor = &f, err, sess
	t.mu.Unlock()
	return f, err
}

// showPrivacy puts the owner's figures pr (trainer.figures) into the
// training view: the meter reads them (ui.PrivacyMeter).
func showPrivacy(s *ui.State, pr plan.Progress) {
	s.Train.EpsSpent, s.Train.EpsMost = pr.Spent, pr.Most
	s.Train.FloorSpent, s.Train.FloorMost = pr.FloorSpent, pr.FloorMost
	s.Train.Share, s.Train.Planned, s.Train.OnPlan = pr.Share, pr.Planned, pr.OnPlan
	s.Train.Releases, s.Train.Decreasing = pr.Releases, pr.Decreasing
}

// publish updates the view after an event.
func (t *trainer) publish(e device.Event, stepMillis float64, bytesSent int64) {
	a := t.a
	pr, joined, st := t.figures()
	var sent ui.Sent
	if e.Kind == device.EventSent {
		t.mu.Lock()
		if t.sent.Round == e.T {
			sent = t.sent
		}
		t.mu.Unlock()
	}
	// From the teacher's Start on, the page shows the final parameters
	// (the rounds, the phones per round, the threshold of a shared-noise
	// session), not the lobby's plan it joined with.
	var final *ui.Session
	if st.Session != nil && *st.Session != a.params {
		if f, err := t.sessionFigures(*st.Session); err == nil {
			v := sessionView(a.code, *st.Session, f)
			final = &v
		}
	}
	a.update(func(s *ui.State) {
		if final != nil {
			s.Session = *final
		}
		showPrivacy(s, pr)
		s.Train.Joined, s.Train.Included = joined, st.Included
		if sent.Round > 0 {
			s.Train.Sent = sent
		}
		s.Train.StepMillis = stepMillis
		s.Train.BytesSent = bytesSent
		s.Data.Used = min(st.Cursor, s.Data.Count)
		if s.Train.Done {
			return // the runtime has stopped: keep its final word
		}
		switch e.Kind {
		case device.EventConnected:
			s.Train.Conn = "connected"
			s.Train.Status = "Connected. Waiting for our turn…"
		case device.EventLobby:
			s.Train.Conn = "connected"
			s.Train.Lobby = true
			s.Train.Status = "" // the lobby notice says it
		case device.EventStarted:
			s.Train.Lobby = false
			s.Train.Status = "Your teacher started the session. Your privacy limit allows it: waiting for our turn…"
		case device.EventRound:
			s.Train.Lobby = false
			s.Train.Round = max(s.Train.Round, e.T)
			s.Train.Status = fmt.Sprintf("Learning from your pictures for round %d…", e.T)
		case device.EventSent:
			s.Train.Status = ui.SentStatus(s.Session.Protection, e.T)
			if s.Session.Shared {
				s.Train.Status = ui.SharedSentStatus(e.T, s.Train.Cohort)
			}
		case device.EventCohort:
			s.Train.Cohort = e.Cohort
			s.Train.Status = fmt.Sprintf("Round %d: ", e.T) + ui.Classmates(e.Cohort)
		case device.EventIncluded:
			s.Train.Status = fmt.Sprintf("Round %d included your update.", e.T)
			if s.Session.Shared {
				s.Train.Status = ui.SharedIncludedStatus(e.T, s.Train.Cohort)
			}
		case device.EventWaiting:
			s.Train.Status = fmt.Sprintf("Round %d went on without you: your next example pictures are still on their way. You join in again as soon as they are here.", e.T)
		case device.EventExcluded:
			s.Train.Status = ui.ExcludedStatus(s.Session.Protection, e.T)
		case device.EventError:
			s.Train.Conn = "reconnecting"
			s.Train.Status = "Lost the connection. Trying again…"
			if e.Err != nil {
				s.Train.Detail = e.Err.Error()
			}
		case device.EventEnd:
			s.Train.Conn = "finished"
		}
	})
}

// pollProgress fetches the session's public progress (rounds committed,
// global accuracy) every second until the page leaves, or once more
// after the session has ended (up to three tries a second apart):
// nothing changes after that. A page whose device stopped for another
// reason (its data or budget used up) goes on showing the class's
// progress.
func (t *trainer) pollProgress() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	done, last, tries := t.done, false, 0
	for {
		err := t.fetchProgress()
		if err != nil {
			js.Global().Get("console").Call("debug", "progress: "+err.Error())
		}
		if last {
			if tries++; err == nil || tries == 3 {
				return
			}
		}
		select {
		case <-t.ctx.Done():
			return
		case <-done:
			done = nil
			t.mu.Lock()
			last = t.ended
			t.mu.Unlock()
		case <-tick.C:
		}
	}
}

// leave makes the device leave the session (it tells the coordinator
// and closes its connection) and stops the progress poll.
func (t *trainer) leave(reason string) {
	if rt := t.runtime(); rt != nil {
		rt.Leave(reason)
	}
	t.cancel()
}

// TryModel classifies a drawing (features x, read from the page's
// "try the model" canvas by the page, which has checked that it is not
// blank) with the current global model (ui.Controller.TryModel). The
// page clears its canvas once the model has answered. The worker runs it
// on a goroutine of its own: it may fetch the model (trainer.model).
func (a *app) TryModel(x []float32) {
	if local.Blank(x) {
		a.update(func(s *ui.State) { s.Train.Prediction = "Draw something first." })
		return
	}
	in, err := modelInputs(a.params, x)
	if err != nil {
		a.update(func(s *ui.State) { s.Train.Prediction = "The drawing could not be read: " + err.Error() })
		return
	}
	w, err := a.currentModel()
	answered := false
	a.update(func(s *ui.State) {
		s.Error = ""
		m, merr := model.New(a.params.Model, len(in), local.Classes)
		if merr != nil || len(w) != m.Dim() {
			s.Train.Prediction = noModel(err)
			return
		}
		c := m.Predict(w, in)
		if names := ui.LabelsOf(s.Session.Labels); c < len(names) {
			s.Train.Prediction = "The model says: " + names[c]
		} else {
			s.Train.Prediction = fmt.Sprintf("The model says: class %d", c)
		}
		answered = true
	})
	if answered {
		a.port.post(bridge.ToPage{Type: bridge.ClearTry})
	}
}

// currentModel returns the global model for "try the model"
// (trainer.model), nil before training started here; fetching it takes
// at most tryTimeout, and meanwhile the answer reads "Asking the class
// model…".
func (a *app) currentModel() ([]float64, error) {
	t := a.trainer
	if t == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(a.ctx, tryTimeout)
	defer cancel()
	return t.model(ctx, func() {
		a.update(func(s *ui.State) { s.Train.Prediction = "Asking the class model…" })
	})
}

// tryTimeout bounds the fetch of the model "try the model" asks for.
const tryTimeout = 15 * time.Second

// noModel is the answer of "try the model" without a model: none was
// committed yet, or it could not be fetched (err).
func noModel(err error) string {
	if err != nil {
		return "Could not reach the class model. Try again in a moment."
	}
	return "No model yet: wait for the first round."
}

// modelInputs returns what session s's model reads of a picture x
// (local.Features pixels): the pixels themselves, or their features
// when the model reads features (plan.SessionFeatures: the function the
// device runtime calls on the training pictures, here on a drawing).
func modelInputs(s wire.SessionParams, x []float32) ([]float32, error) {
	f, err := plan.SessionFeatures(s)
	if err != nil || f == nil {
		return x, err
	}
	return f.Picture(x)
}
