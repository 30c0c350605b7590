//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"syscall/js"
	"time"

	"github.com/vugu/vugu"

	"browserfl/device"
	"browserfl/shared/dataset"
	"browserfl/shared/optim"
	"browserfl/shared/privacy/plan"
	"browserfl/shared/wire"
	"browserfl/wasm/idb"
	"browserfl/wasm/jsw"
	"browserfl/wasm/local"
	"browserfl/wasm/ui"
)

// ownerDelta is the owner's delta: the page reads its owner's budget,
// and states every epsilon, at plan.DefaultDelta. The session's own delta
// never takes its place (a session announcing epsilon 8 at delta 0.999
// would otherwise pass a budget of 8 with rho 14.9 instead of 1.23).
const ownerDelta = plan.DefaultDelta

// Storage keys of the page's own records (the device runtime's records
// live under "dev/").
const (
	keyConsent  = "consent"      // JSON consent{}
	keyTraining = "training"     // present once the owner pressed Start
	keyCharge   = "owner-charge" // this device's charge id in the owner's ledger
	keyData     = "data/"        // data/<source>/images, data/<source>/labels
)

type consent struct {
	Budget float64 `json:"budget_epsilon"` // max epsilon at Delta
	Delta  float64 `json:"delta"`          // the owner's delta (ownerDelta)
	Rho    float64 `json:"budget_rho"`     // the same budget as standard zCDP rho at Delta
	// Trusted records that the owner consented to a trusted-server
	// session, whose updates are clipped but not noised by the page.
	Trusted bool `json:"trusted,omitempty"`
}

// app implements ui.Controller. Fields other than state are owned by
// the goroutines started from its methods; state is written only under
// the event lock.
type app struct {
	ee    vugu.EventEnv
	state *ui.State
	ctx   context.Context
	stop  context.CancelFunc

	code    string
	base    string // coordinator origin, e.g. http://host:port
	store   *idb.Store
	params  wire.SessionParams
	delta   float64 // the owner's delta, at which the budget is read and epsilon stated
	consent consent

	setsMu sync.Mutex
	sets   map[string]dataset.Set // source -> samples; use source/setSource/all

	draw, try canvas
	trainer   *trainer
}

func newApp(ee vugu.EventEnv) *app {
	ctx, stop := context.WithCancel(context.Background())
	return &app{
		ee:    ee,
		delta: ownerDelta,
		state: &ui.State{Screen: ui.ScreenLoading},
		ctx:   ctx,
		stop:  stop,
		sets:  map[string]dataset.Set{},
	}
}

// update runs f under the event lock and re-renders.
func (a *app) update(f func(s *ui.State)) {
	a.ee.Lock()
	f(a.state)
	a.ee.UnlockRender()
}

func (a *app) fail(what string, err error) {
	a.update(func(s *ui.State) { s.Error = what + ": " + err.Error() })
}

// start loads the session's public parameters and this device's stored
// state, then shows the screen where the owner left off.
func (a *app) start() {
	a.code = jsw.Query("code")
	if a.code == "" {
		a.code = "demo"
	}
	loc := js.Global().Get("location")
	a.base = loc.Get("origin").String()
	st, err := idb.Open(a.ctx, "browserfl:"+a.code)
	if err != nil {
		a.fail("Storage", err)
		return
	}
	a.store = st
	// Site data cleared while the page is open: stop and say so (the
	// device has left; nothing of it remains in this browser).
	st.OnDeleted(func() {
		go func() {
			if a.trainer != nil {
				a.trainer.leave()
			}
			a.update(func(s *ui.State) { s.Screen = ui.ScreenLeft; s.Data = ui.Data{} })
		}()
	})
	go warmUp(a.ctx)
	// The coordinator may be down (restarting) or unreachable: keep
	// trying, with a growing pause, and say so meanwhile.
	for wait := time.Second; ; wait = min(2*wait, 15*time.Second) {
		err := a.loadSession()
		if err == nil {
			break
		}
		var he *jsw.HTTPError
		if errors.As(err, &he) && (he.Status == http.StatusForbidden || he.Status == http.StatusNotFound) {
			// A wrong join code is final: no retry.
			a.fail("Session", fmt.Errorf("the join code %q is not valid for this coordinator", a.code))
			return
		}
		a.fail("Session (retrying)", err)
		select {
		case <-a.ctx.Done():
			return
		case <-time.After(wait):
		}
	}
	a.update(func(s *ui.State) { s.Error = "" })
	if err := a.loadData(); err != nil {
		a.fail("Stored data", err)
	}
	b, err := st.Get(a.ctx, keyConsent)
	switch {
	case errors.Is(err, idb.ErrNotFound):
		a.update(func(s *ui.State) { s.Screen = ui.ScreenConsent })
	case err != nil:
		a.fail("Stored consent", err)
	default:
		if err := json.Unmarshal(b, &a.consent); err != nil {
			a.fail("Stored consent", err)
			return
		}
		// The page has always offered one delta to its owner; a consent
		// stored with another (older pages used the session's) is read
		// at the owner's delta.
		a.consent.Delta = a.delta
		if a.consent.Rho, err = (plan.Budget{Epsilon: a.consent.Budget, Delta: a.delta}).Rho(); err != nil {
			a.fail("Stored consent", err)
			return
		}
		_, terr := st.Get(a.ctx, keyTraining)
		a.update(func(s *ui.State) {
			s.Budget = a.consent.Budget
			s.Screen = ui.ScreenData
		})
		if terr == nil {
			a.startTraining() // resume after a reload or a browser restart
		}
	}
	jsw.Mark("fl-ready")
}

func (a *app) loadSession() error {
	body, err := jsw.Fetch(a.ctx, a.base+"/api/session?code="+url.QueryEscape(a.code))
	if err != nil {
		return err
	}
	var p wire.SessionParams
	if err := json.Unmarshal(body, &p); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	if err := p.Validate(); err != nil {
		return err
	}
	a.params = p
	f, err := device.SessionFigures(p, a.delta)
	if err != nil {
		return err
	}
	if !f.Private {
		return fmt.Errorf("session %q gives no privacy guarantee: this page does not join it", p.Name)
	}
	summary := ""
	if alg, err := optim.Lookup(p.Algorithm); err == nil {
		summary = "(" + alg.Summary + ")"
	}
	mode := "untrusted"
	if device.Params(p).Trusted() {
		mode = "trusted"
	}
	a.update(func(s *ui.State) {
		s.Session = ui.Session{
			JoinCode: a.code, Algorithm: p.Algorithm, Summary: summary, Mode: mode, Model: p.Model,
			Rounds: p.Rounds, Cohort: p.Cohort, Clip: p.Clip, Rho: f.WorstRho,
			Delta: f.Delta, Epsilon: f.Epsilon, Batch: p.Batch,
			EpsilonText: f.EpsilonText(), DeltaText: f.DeltaText(), Figures: f.Text(),
		}
		if s.Budget <= 0 {
			s.Budget = plan.DefaultBudgetEpsilon
		}
	})
	return nil
}

// Join implements ui.Controller.
func (a *app) Join(budget float64) {
	owner := plan.Budget{Epsilon: budget, Delta: a.delta}
	rho, err := owner.Rho()
	if err != nil {
		a.state.Error = "Budget: " + err.Error()
		return
	}
	if err := device.CheckSession(a.params, device.Policy{Budget: owner, AllowTrusted: true}); err != nil {
		if !errors.Is(err, plan.ErrOverBudget) {
			a.state.Error = "The page will not join this session: " + err.Error()
			return
		}
		a.state.Error = fmt.Sprintf("This session may spend up to ε = %s of your privacy (at δ = %s), more than your budget of %g. "+
			"The page will not join it. Raise your budget or choose not to join.", a.state.Session.EpsilonText, a.state.Session.DeltaText, budget)
		return
	}
	a.consent = consent{Budget: budget, Delta: a.delta, Rho: rho, Trusted: a.state.Session.Mode == "trusted"}
	a.state.Budget = budget
	go func() {
		b, _ := json.Marshal(a.consent)
		if err := a.store.Put(a.ctx, map[string][]byte{keyConsent: b}); err != nil {
			a.fail("Saving consent", err)
			return
		}
		a.update(func(s *ui.State) { s.Screen = ui.ScreenData; s.Error = "" })
	}()
}

// Decline implements ui.Controller.
func (a *app) Decline() {
	a.state.Screen = ui.ScreenLeft
	go a.destroy()
}

// Forget implements ui.Controller: stop, delete everything, leave.
func (a *app) Forget() {
	a.state.Screen = ui.ScreenLeft
	go func() {
		if a.trainer != nil {
			a.trainer.leave()
		}
		a.destroy()
	}()
}

func (a *app) destroy() {
	if a.store == nil {
		return
	}
	if a.trainer != nil {
		a.trainer.leave()
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

// Train implements ui.Controller.
func (a *app) Train() {
	go func() {
		if err := a.store.Put(a.ctx, map[string][]byte{keyTraining: {1}}); err != nil {
			a.fail("Saving", err)
			return
		}
		a.startTraining()
	}()
}

// source returns the stored samples of src.
func (a *app) source(src string) (dataset.Set, bool) {
	a.setsMu.Lock()
	defer a.setsMu.Unlock()
	s, ok := a.sets[src]
	return s, ok
}

// setSource records the samples of src (already stored).
func (a *app) setSource(src string, s dataset.Set) {
	a.setsMu.Lock()
	a.sets[src] = s
	a.setsMu.Unlock()
}

// all returns every stored sample, sources in a fixed order (demo, files,
// drawn) so the single-pass cursor means the same thing after a reload.
func (a *app) all() dataset.Set {
	var parts []dataset.Set
	for _, src := range []string{"demo", "files", "drawn"} {
		if s, ok := a.source(src); ok {
			parts = append(parts, s)
		}
	}
	return local.Join("local", parts...)
}

func (a *app) publishData() {
	all := a.all()
	n := map[string]int{}
	a.setsMu.Lock()
	for k, s := range a.sets {
		n[k] = len(s.Samples)
	}
	a.setsMu.Unlock()
	a.update(func(s *ui.State) {
		s.Data.Count = len(all.Samples)
		s.Data.PerLabel = local.Counts(all)
		s.Data.Sources = local.SortedSources(n)
		s.Data.Busy = ""
	})
}
