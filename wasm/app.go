//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sync"
	"syscall/js"
	"time"

	"github.com/vugu/vugu"

	"browserfl/device"
	"browserfl/shared/dataset"
	"browserfl/shared/optim"
	"browserfl/shared/privacy"
	"browserfl/shared/wire"
	"browserfl/wasm/idb"
	"browserfl/wasm/jsw"
	"browserfl/wasm/local"
	"browserfl/wasm/ui"
)

// DefaultDelta is the delta at which the page states epsilon when the
// session's public parameters give rho but no delta: it is below 1/n
// for any classroom- or city-sized population.
const DefaultDelta = 1e-5

// sessionPrivacy returns the session's per-device promise as standard
// zCDP rho and as (epsilon, delta). The papers' rho_p is converted
// explicitly: a device is rho_p^2/2-zCDP.
func sessionPrivacy(p wire.SessionParams) (rho, eps, delta float64, err error) {
	delta = p.Delta
	if delta <= 0 {
		delta = DefaultDelta
	}
	switch {
	case p.RhoPaper > 0:
		rho = privacy.ZCDPFromPaperRho(p.RhoPaper)
		eps, err = privacy.ZCDPToEpsilon(rho, delta)
	case p.Epsilon > 0:
		eps = p.Epsilon
		rho, err = privacy.ZCDPFromEpsilon(eps, delta)
	default:
		err = errors.New("the session states no privacy parameter (rho_p or epsilon)")
	}
	if err != nil {
		return 0, 0, 0, fmt.Errorf("session privacy: %w", err)
	}
	return rho, eps, delta, nil
}

// maxDefaultBudget caps the default budget offered on the consent
// screen: a session that promises more than this is not accepted by
// default, the owner has to raise the number themselves.
const maxDefaultBudget = 8.0

// Storage keys of the page's own records (the device runtime's records
// live under "dev/").
const (
	keyConsent  = "consent"  // JSON consent{}
	keyTraining = "training" // present once the owner pressed Start
	keyData     = "data/"    // data/<source>/images, data/<source>/labels
)

type consent struct {
	Budget float64 `json:"budget_epsilon"` // max epsilon at Delta
	Delta  float64 `json:"delta"`
	Rho    float64 `json:"budget_rho"` // the same budget as standard zCDP rho
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
	delta   float64 // the delta epsilon is stated at
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
	rho, eps, delta, err := sessionPrivacy(p)
	if err != nil {
		return err
	}
	a.delta = delta
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
			Rounds: p.Rounds, Cohort: p.Cohort, Clip: p.Clip, Rho: rho,
			Delta: delta, Epsilon: eps, Batch: p.Batch,
		}
		s.Budget = math.Min(maxDefaultBudget, math.Ceil(eps*100)/100)
		if s.Budget <= 0 {
			s.Budget = 1
		}
	})
	return nil
}

// Join implements ui.Controller.
func (a *app) Join(budget float64) {
	eps := a.state.Session.Epsilon
	if eps > budget {
		a.state.Error = fmt.Sprintf("This session may spend up to ε = %.3g of your privacy, more than your budget of %.3g. "+
			"The page will not join it. Raise your budget or choose not to join.", eps, budget)
		return
	}
	rho, err := privacy.ZCDPFromEpsilon(budget, a.delta)
	if err != nil {
		a.state.Error = "Budget: " + err.Error()
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
