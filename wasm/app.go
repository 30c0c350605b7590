//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"syscall/js"
	"time"

	"browserfl/device"
	"browserfl/shared/optim/algo"
	"browserfl/shared/plan"
	"browserfl/shared/task"
	"browserfl/shared/wire"
	"browserfl/wasm/bridge"
	"browserfl/wasm/idb"
	"browserfl/wasm/jsw"
	"browserfl/wasm/samples"
	"browserfl/wasm/ui"
	"browserfl/wasm/warm"
)

// ownerDelta is the owner's delta: the page reads its owner's budget,
// and states every epsilon, at plan.DefaultDelta. The session's own delta
// never takes its place (a session announcing epsilon 8 at delta 0.999
// would otherwise pass a budget of 8 with rho 14.9 instead of 1.23).
const ownerDelta = plan.DefaultDelta

// Storage keys of the page's own records (the device runtime's records
// live under "dev/", the data library's under samples.KeyPrefix, the
// owner's charge id at owner.KeyCharge).
const (
	keyConsent  = "consent"  // JSON consent{}
	keyTraining = "training" // {1} once the owner pressed Start, {0} after "I'm done"
)

type consent struct {
	Budget float64 `json:"budget_epsilon"` // max epsilon at Delta
	Delta  float64 `json:"delta"`          // the owner's delta (ownerDelta)
	Rho    float64 `json:"budget_rho"`     // the same budget as standard zCDP rho at Delta
	// Trusted records that the owner consented to a trusted-server
	// session, whose updates are clipped but not noised by the page.
	Trusted bool `json:"trusted,omitempty"`
	// Nickname is the optional name for the teacher's list (kept only
	// in this browser and sent in hello).
	Nickname string `json:"nickname,omitempty"`
}

// app is the device half of the page, run in the page's Web Worker: it
// holds the view state (ui.State), performs the student's actions as the
// page forwards them (see worker.go) and sends every change of the state
// to the page as a patch. Fields other than state are owned by the
// goroutines started from its methods; state is read and written only
// through update (under mu).
type app struct {
	port *port // the page, at the other end of the worker

	mu      sync.Mutex
	state   *ui.State
	sent    bridge.Snapshot // the state as last sent to the page
	pending bool            // a publish is scheduled

	ctx  context.Context
	stop context.CancelFunc

	code    string
	base    string // coordinator origin, e.g. http://host:port
	store   *idb.Store
	params  wire.SessionParams
	delta   float64 // the owner's delta, at which the budget is read and epsilon stated
	consent consent

	// lib is the samples kept in this browser (set with store).
	lib *samples.Library
	// task is a row task's session's task (nil for pictures).
	task *task.Definition

	trainer *trainer
	warm    sync.Once // the JIT warm-up, once however many codes are typed
}

// leaveJoin reports whether the join screen is shown and, if so, leaves
// it for the loading screen: a code typed there is being opened (start
// again, without reloading the page).
func (a *app) leaveJoin() bool {
	ok := false
	a.update(func(s *ui.State) {
		if s.Screen == ui.ScreenJoin {
			s.Screen, s.Error, ok = ui.ScreenLoading, "", true
		}
	})
	return ok
}

func newApp(p *port) *app {
	ctx, stop := context.WithCancel(context.Background())
	return &app{
		port:  p,
		delta: ownerDelta,
		state: &ui.State{Screen: ui.ScreenLoading},
		ctx:   ctx,
		stop:  stop,
	}
}

// publishEvery is the longest a change of the state waits before it is
// sent to the page: the changes within it go as one patch, so the page
// renders at most about 20 times a second however fast rounds come.
const publishEvery = 50 * time.Millisecond

// update runs f on the state; what changed goes to the page within
// publishEvery.
func (a *app) update(f func(s *ui.State)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a.state)
	if !a.pending {
		a.pending = true
		time.AfterFunc(publishEvery, func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.pending = false
			a.publishLocked()
		})
	}
}

// publishLocked sends the page the fields changed since the last
// message (mu held).
func (a *app) publishLocked() {
	snap, err := bridge.Take(a.state)
	if err != nil {
		js.Global().Get("console").Call("error", "browserfl worker: "+err.Error())
		return
	}
	patch, err := bridge.Diff(a.sent, snap)
	if err != nil {
		js.Global().Get("console").Call("error", "browserfl worker: "+err.Error())
		return
	}
	if patch == nil {
		return
	}
	a.sent = snap
	a.port.post(bridge.ToPage{Type: bridge.State, Patch: patch})
}

func (a *app) fail(what string, err error) {
	a.update(func(s *ui.State) { s.Error = what + ": " + err.Error() })
}

// start loads the session's public parameters and this device's stored
// state, then shows the screen where the owner left off. Without a join
// code in the URL it shows the box to type one; a session that cannot be
// joined (finished, full) is said on the first screen, before consent
// and before anything is stored or downloaded.
//
// code and origin come from the page's address (the start message).
func (a *app) start(code, origin string) {
	a.code = wire.NormalizeJoinCode(code) // one device per session whatever the case typed
	a.base = origin
	if a.code == "" {
		a.update(func(s *ui.State) { s.Screen = ui.ScreenJoin })
		a.port.mark("fl-ready")
		return
	}
	a.warm.Do(func() { go warm.Up(a.ctx, a.port.mark) })
	if !a.awaitSession() {
		return
	}
	a.update(func(s *ui.State) { s.Error = "" })
	dbName := "browserfl:" + a.code
	if known, ok := dbExists(a.ctx, dbName); ok && !known {
		// A newcomer: a session that is over or full is said now,
		// before anything is stored.
		if closed := a.closedReason(); closed != "" {
			a.update(func(s *ui.State) { s.Screen = ui.ScreenClosed; s.Closed = closed })
			a.port.mark("fl-ready")
			return
		}
	}
	st, err := idb.Open(a.ctx, dbName)
	if err != nil {
		a.fail("Storage", err)
		return
	}
	a.lib = samples.New(st, a.task, a.publishData)
	a.store = st
	// Site data cleared while the page is open: stop and say so (the
	// device has left; nothing of it remains in this browser).
	st.OnDeleted(func() {
		go func() {
			if a.trainer != nil {
				a.trainer.leave(wire.LeaveStopped)
			}
			a.update(func(s *ui.State) { s.Screen = ui.ScreenLeft; s.Data = ui.Data{} })
		}()
	})
	b, err := st.Get(a.ctx, keyConsent)
	if errors.Is(err, idb.ErrNotFound) {
		// A newcomer: a session that is over or full is said now.
		if closed := a.closedReason(); closed != "" {
			a.update(func(s *ui.State) { s.Screen = ui.ScreenClosed; s.Closed = closed })
			a.port.mark("fl-ready")
			return
		}
	}
	if lerr := a.lib.Load(a.ctx); lerr != nil {
		a.fail("Stored pictures", lerr)
	}
	// How far the single-pass cursor is: once samples are used, only
	// drawings (appended last) may be added, so the samples already used
	// keep their places and none is used twice.
	if db, derr := st.Get(a.ctx, keyDevice); derr == nil {
		var ds struct {
			Cursor int `json:"cursor"`
		}
		if json.Unmarshal(db, &ds) == nil {
			a.update(func(s *ui.State) { s.Data.Used = min(ds.Cursor, s.Data.Count) })
		}
	}
	switch {
	case errors.Is(err, idb.ErrNotFound):
		a.update(func(s *ui.State) { s.Screen = ui.ScreenConsent })
	case err != nil:
		a.fail("Stored consent", err)
	default:
		if !a.restoreConsent(st, b) {
			return
		}
	}
	a.port.mark("fl-ready")
}

// awaitSession loads the session's public parameters, retrying while
// the coordinator is down (restarting) or unreachable, with a growing
// pause, and saying so meanwhile. It reports false when the join code is
// wrong (the box is shown again) or the page is closing.
func (a *app) awaitSession() bool {
	for wait := time.Second; ; wait = min(2*wait, 15*time.Second) {
		err := a.loadSession()
		if err == nil {
			return true
		}
		if errors.Is(err, errNoProtection) {
			// Final: the session adds no noise.
			a.update(func(s *ui.State) { s.Error = ui.NoProtection })
			a.port.mark("fl-ready")
			return false
		}
		if errors.Is(err, errSessionRefused) {
			// Final: the task the session carries does not fit it.
			a.update(func(s *ui.State) { s.Error = err.Error() })
			a.port.mark("fl-ready")
			return false
		}
		var he *jsw.HTTPError
		if errors.As(err, &he) && (he.Status == jsw.StatusForbidden || he.Status == jsw.StatusNotFound) {
			// A wrong join code is final: no retry, nothing stored; the
			// box again.
			a.update(func(s *ui.State) {
				s.Screen = ui.ScreenJoin
				s.Code = a.code
				s.Error = fmt.Sprintf("The code “%s” is not valid. Check it with your teacher and try again.", a.code)
			})
			a.port.mark("fl-ready")
			return false
		}
		a.update(func(s *ui.State) {
			s.Error = "Can't reach the class server (retrying)…"
			s.Train.Detail = err.Error()
		})
		js.Global().Get("console").Call("debug", "session: "+err.Error())
		select {
		case <-a.ctx.Done():
			return false
		case <-time.After(wait):
		}
	}
}

// restoreConsent restores the consent stored as b and shows the data
// screen, resuming training if it was on. It reports false when the
// stored consent cannot be read (said on the page).
func (a *app) restoreConsent(st *idb.Store, b []byte) bool {
	if err := json.Unmarshal(b, &a.consent); err != nil {
		a.fail("Stored consent", err)
		return false
	}
	// The page has always offered one delta to its owner; a consent
	// stored with another (older pages used the session's) is read
	// at the owner's delta.
	a.consent.Delta = a.delta
	if wire.CheckNickname(a.consent.Nickname) != nil {
		a.consent.Nickname = "" // never send a stored name the coordinator would refuse
	}
	nick := a.consent.Nickname
	a.update(func(s *ui.State) { s.Nickname = nick })
	var err error
	if a.consent.Rho, err = (plan.Budget{Epsilon: a.consent.Budget, Delta: a.delta}).Rho(); err != nil {
		a.fail("Stored consent", err)
		return false
	}
	tb, terr := st.Get(a.ctx, keyTraining)
	resume := terr == nil && len(tb) > 0 && tb[0] == 1
	a.update(func(s *ui.State) {
		s.Budget = a.consent.Budget
		if !resume {
			s.Screen = ui.ScreenData
		}
	})
	if resume {
		// After a reload or a browser restart: straight to training,
		// which shows once the saved state is loaded.
		a.startTraining()
	}
	return true
}

// dbExists reports whether this browser holds the database name; ok is
// false when the browser cannot tell (no indexedDB.databases).
func dbExists(ctx context.Context, name string) (exists, ok bool) {
	idx := js.Global().Get("indexedDB")
	if !idx.Truthy() || idx.Get("databases").Type() != js.TypeFunction {
		return false, false
	}
	list, err := jsw.Await(ctx, idx.Call("databases"))
	if err != nil {
		return false, false
	}
	for i := 0; i < list.Length(); i++ {
		if list.Index(i).Get("name").String() == name {
			return true, true
		}
	}
	return false, true
}

// closedReason asks the coordinator's public status whether the session
// has finished or is full (ui.ClosedFinished, ui.ClosedFull), or ""
// when it can be joined or the status is not available (the device then
// learns it on connecting).
func (a *app) closedReason() string {
	// The status needs the join code, as every session endpoint does
	// (without it the coordinator answers 403 and counts a wrong guess).
	body, err := jsw.Fetch(a.ctx, a.base+"/api/status?code="+url.QueryEscape(a.code))
	if err != nil {
		return ""
	}
	var st struct {
		Finished bool `json:"finished"`
		Full     bool `json:"full"`
	}
	if json.Unmarshal(body, &st) != nil {
		return ""
	}
	switch {
	case st.Finished:
		return ui.ClosedFinished
	case st.Full:
		return ui.ClosedFull
	}
	return ""
}

// pageHidden makes the device leave when the page is hidden for good
// (closed, reloaded, navigated away: the page's pagehide event, see
// page.go). The page has already sent the leave message and closed the
// socket itself (web/app.js); this stops the runtime from reconnecting in
// the moments before the browser ends the worker. It does not block.
func (a *app) pageHidden() {
	if t := a.trainer; t != nil {
		if rt := t.runtime(); rt != nil {
			rt.Leave(wire.LeaveStopped) // does not block
		}
	}
}

// errSessionRefused is wrapped when the page will not join a session
// whatever happens (its task does not match its shape): said on the
// page, not retried.
var errSessionRefused = errors.New("this page will not join this session")

// errNoProtection is returned for a session that adds no noise (a
// non-private reference algorithm): the page says so (ui.NoProtection)
// and does not join.
var errNoProtection = errors.New("the session adds no noise")

func (a *app) loadSession() error {
	body, err := jsw.Fetch(a.ctx, a.base+"/api/session?code="+url.QueryEscape(a.code))
	if err != nil {
		return err
	}
	var p wire.SessionParams
	if err := json.Unmarshal(body, &p); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	if err := wire.ValidateSession(p); err != nil {
		return err
	}
	d, err := plan.SessionTask(p)
	if err != nil {
		return fmt.Errorf("%w: %w", errSessionRefused, err)
	}
	if _, err := plan.SessionFeatures(p); err != nil {
		// A transform this page does not know: it cannot compute what
		// the model reads.
		return fmt.Errorf("%w: %w", errSessionRefused, err)
	}
	a.params, a.task = p, d
	f, err := device.SessionFigures(p, a.delta)
	if err != nil {
		return err
	}
	if !f.Private {
		return errNoProtection
	}
	view := sessionView(a.code, p, f)
	a.update(func(s *ui.State) {
		s.Session = view
		if s.DrawLbl >= len(ui.LabelsOf(view.Labels)) {
			s.DrawLbl = 0
		}
		if s.Budget <= 0 {
			s.Budget = plan.DefaultBudgetEpsilon
		}
	})
	return nil
}

// sessionView is what the page shows of session p (join code code), whose
// figures at the owner's delta are f: the lobby's plan until the teacher's Start, the
// final parameters from then on (trainer.publish).
func sessionView(code string, p wire.SessionParams, f plan.Figures) ui.Session {
	summary := ""
	if alg, err := algo.Lookup(p.Algorithm); err == nil {
		summary = "(" + alg.Summary + ")"
	}
	mode := "untrusted"
	if algo.Trusted(p) {
		mode = "trusted"
	}
	labels := p.LabelNames()
	if len(labels) == 0 && p.Classes != len(ui.DigitLabels) {
		labels = make([]string, p.Classes)
		for i := range labels {
			labels[i] = fmt.Sprint(i)
		}
	}
	return ui.Session{
		JoinCode: code, Algorithm: p.Algorithm, Summary: summary, Mode: mode, Protection: f.Protection(), Model: p.Model,
		Rounds: p.Rounds, Cohort: p.Cohort, Clip: p.Clip, Rho: f.WorstRho,
		Delta: f.Delta, Epsilon: f.Epsilon, Batch: p.Batch,
		EpsilonText: f.EpsilonText(), DeltaText: f.DeltaText(), Figures: f.Text(),
		Labels: labels, SinglePass: p.SinglePass(),
		Task: p.Task, DemoRows: p.DemoShards,
		Shared: f.Shared, Promise: f.Promise, Floor: f.Floor, PromiseText: f.PromiseText(), FloorText: f.FloorText(),
		Threshold: f.Threshold, Colluders: f.Colluders,
	}
}

// Join records the owner's consent and budget (ui.Controller.Join; the
// nickname is the one the page sent in its last "ui" message).
func (a *app) Join(budget float64) {
	if a.store == nil {
		return // the consent screen is not shown before the store is open
	}
	owner := plan.Budget{Epsilon: budget, Delta: a.delta}
	ok := false
	a.update(func(s *ui.State) {
		rho, err := owner.Rho()
		if err != nil {
			s.Error = "Your limit: " + err.Error()
			return
		}
		if err := device.CheckSession(a.params, device.Policy{Budget: owner, AllowTrusted: true}); err != nil {
			if !errors.Is(err, plan.ErrOverBudget) {
				s.Error = "The page will not join this session: " + err.Error()
				return
			}
			s.Error = ui.OverLimit(s.Session, budget)
			return
		}
		a.consent = consent{Budget: budget, Delta: a.delta, Rho: rho, Trusted: s.Session.Mode == "trusted",
			Nickname: s.Nickname}
		s.Budget = budget
		ok = true
	})
	if !ok {
		return
	}
	go func() {
		b, _ := json.Marshal(a.consent)
		if err := a.store.Put(a.ctx, map[string][]byte{keyConsent: b}); err != nil {
			a.fail("Saving consent", err)
			return
		}
		a.update(func(s *ui.State) { s.Screen = ui.ScreenData; s.Error = "" })
	}()
}

// Decline leaves without joining (ui.Controller.Decline).
func (a *app) Decline() {
	a.update(func(s *ui.State) { s.Screen = ui.ScreenLeft })
	go a.destroy()
}

// Forget stops, deletes everything and leaves (ui.Controller.Forget).
func (a *app) Forget() {
	a.update(func(s *ui.State) { s.Screen = ui.ScreenLeft })
	go func() {
		if a.trainer != nil {
			a.trainer.leave(wire.LeaveStopped)
		}
		a.destroy()
	}()
}

// Done (ui.Controller.Done): the device leaves (it tells the
// coordinator, which stops asking it) and the page thanks the student.
// The pictures stay; a reload shows the data screen, not training.
func (a *app) Done() {
	a.update(func(s *ui.State) {
		s.Screen = ui.ScreenDone
		s.Error = ""
	})
	t := a.trainer
	go func() {
		if t != nil {
			t.leave(wire.LeaveStopped)
		}
		if a.store != nil {
			if err := a.store.Put(a.ctx, map[string][]byte{keyTraining: {0}}); err != nil {
				a.fail("Saving", err)
			}
		}
	}()
}

// DrawMore (ui.Controller.DrawMore): back to the data screen after the
// data ran out (the device has already left); "Start helping" joins
// again with the new pictures.
func (a *app) DrawMore() {
	a.update(func(s *ui.State) {
		s.Screen = ui.ScreenData
		s.Error = ""
		s.Data.DrawHint = ""
	})
}

func (a *app) destroy() {
	if a.store == nil {
		return
	}
	if a.trainer != nil {
		a.trainer.leave(wire.LeaveStopped)
		// The device makes no more releases: its charge in the owner's
		// ledger becomes what it spent.
		a.trainer.settle(context.Background())
	}
	if err := a.store.Destroy(context.Background()); err != nil {
		a.fail("Deleting storage", err)
		return
	}
	a.update(func(s *ui.State) { s.Data = ui.Data{} })
}

// Train starts (or resumes) training (ui.Controller.Train).
func (a *app) Train() {
	if a.store == nil {
		return
	}
	a.update(func(s *ui.State) {
		s.Error = ""
		s.Data.DrawHint = ""
	})
	go func() {
		if err := a.store.Put(a.ctx, map[string][]byte{keyTraining: {1}}); err != nil {
			a.fail("Saving", err)
			return
		}
		a.startTraining()
	}()
}
