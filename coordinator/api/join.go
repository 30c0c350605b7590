package api

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"browserfl/coordinator/site"
	"browserfl/coordinator/store"
	"browserfl/coordinator/view"
	"browserfl/shared/wire"
)

// This file holds what the classroom sees besides the training itself:
// the join addresses (every non-loopback address of the machine), a QR
// code of the join URL drawn on the server, the final model as JSON, and
// the figures the dashboard reads from the store so that they survive a
// restart (session start, most rounds any one device was included in,
// how many devices took part).

// tally counts, over the committed round records, the rounds each device
// was included in and asked in, and keeps the best and the last
// evaluation. It reads only what changed since its last call: the rounds
// committed since, and the last evalLag rounds again (an evaluation is
// added to a record after its commit); a roll back starts it over.
type tally struct {
	mu          sync.Mutex
	last        int // rounds <= last are counted
	included    map[string]int
	asked       map[string]int
	best, final AccuracyPoint
	haveEval    bool
}

func (tl *tally) update(s *store.Store, evalLag int) error {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	committed, _, err := s.State()
	if err != nil {
		return err
	}
	if committed < tl.last || tl.included == nil {
		tl.last, tl.included, tl.asked = 0, map[string]int{}, map[string]int{}
		tl.best, tl.final, tl.haveEval = AccuracyPoint{}, AccuracyPoint{}, false
	}
	after := max(0, tl.last-evalLag)
	for {
		recs, err := s.Rounds(after, 1000)
		if err != nil {
			return err
		}
		for _, r := range recs {
			after = r.T
			if r.T > tl.last {
				for _, id := range r.Included {
					tl.included[id]++
				}
				for _, id := range r.Cohort {
					tl.asked[id]++
				}
				tl.last = r.T
			}
			if r.Evaluated {
				p := AccuracyPoint{Round: r.T, Accuracy: r.Accuracy, Loss: r.Loss, Samples: r.EvalSamples}
				if !tl.haveEval || p.Accuracy > tl.best.Accuracy || p.Round == tl.best.Round {
					tl.best = p
				}
				if !tl.haveEval || p.Round >= tl.final.Round {
					tl.final = p
				}
				tl.haveEval = true
			}
		}
		if len(recs) < 1000 {
			return nil
		}
	}
}

// joinState is what Handler keeps for the handlers of this file.
type joinState struct {
	c     Session
	info  site.JoinInfo
	start time.Time
	tally tally
}

// newJoin reads (or sets) the session start in the store. The join URLs
// get this session's own join code (a host makes a new code for every
// session but builds the URLs once).
func newJoin(c Session, info site.JoinInfo) *joinState {
	info = info.WithCode(c.Config().JoinCode)
	j := &joinState{c: c, info: info}
	start, err := c.Store().SessionStart(c.Started())
	if err != nil {
		c.Front().Log.Warn("session start unavailable; uptime counts from this process's start", "err", err)
		start = c.Started()
	}
	j.start = start
	return j
}

// Summary returns the store-backed figures.
func (j *joinState) Summary() (view.Summary, error) {
	sum := view.Summary{SessionStart: j.start}
	// Evaluations land in a record after its commit: re-read the last
	// few rounds each time.
	if err := j.tally.update(j.c.Store(), 2*j.c.Config().EvalEvery+4); err != nil {
		return sum, err
	}
	j.tally.mu.Lock()
	sum.Participants = len(j.tally.included)
	for _, n := range j.tally.included {
		sum.MostIncluded = max(sum.MostIncluded, n)
	}
	for _, n := range j.tally.asked {
		sum.MostAsked = max(sum.MostAsked, n)
	}
	if j.tally.haveEval {
		best, final := j.tally.best, j.tally.final
		sum.BestAccuracy, sum.BestRound = &best.Accuracy, best.Round
		sum.FinalAccuracy, sum.FinalRound, sum.AccuracySamples = &final.Accuracy, final.Round, final.Samples
	}
	j.tally.mu.Unlock()
	if n, err := j.c.Store().Devices(); err == nil {
		sum.Registered = n
	}
	pv := view.SessionPrivacy(j.c.Config().Session)
	sum.WorstEpsilonText, sum.WorstText = pv.EpsilonText, pv.Text
	return sum, nil
}

// fill adds the join addresses, the store-backed figures and the uptime
// since the session start to s.
func (j *joinState) fill(s *view.Status, r *http.Request) {
	s.Join.JoinInfo = j.joinInfo(r)
	if s.Join.LoopbackOnly {
		s.Join.LoopbackHint = s.Join.LANHint()
	}
	s.UptimeSec = time.Since(j.start).Seconds()
	sum, err := j.Summary()
	if err != nil {
		j.c.Front().Log.Warn("dashboard summary", "err", err)
		return
	}
	s.Join.Summary = &sum
	// The store's count, not this process's: it survives restarts.
	s.Privacy.MaxParticipations = max(s.Privacy.MaxParticipations, sum.MostIncluded)
}

// joinInfo is the configured join info, or the address the request came
// to when none was configured.
func (j *joinState) joinInfo(r *http.Request) site.JoinInfo {
	if len(j.info.URLs) > 0 {
		return j.info
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if !site.ValidHost(r.Host) || r.Host == "" {
		return site.JoinInfo{}
	}
	return site.JoinInfo{URLs: []string{scheme + "://" + r.Host + "/?code=" + url.QueryEscape(j.c.Config().JoinCode)}}
}

// register adds the handlers of this file to mux.
func (j *joinState) register(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/join-qr.png", WithCode(j.c, j.serveQR))
	mux.HandleFunc("GET /api/model.json", WithCode(j.c, j.serveModelJSON))
}

// serveQR draws join URL ?i= (default 0) as a PNG.
func (j *joinState) serveQR(w http.ResponseWriter, r *http.Request) {
	info := j.joinInfo(r)
	i, ok := queryInt(w, r, "i")
	if !ok {
		return
	}
	if i < 0 || i >= len(info.URLs) {
		http.Error(w, "no such join address", http.StatusNotFound)
		return
	}
	png, err := site.QRPNG(info.URLs[i])
	if err != nil {
		http.Error(w, "qr: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(png)
}

// Model returns the global model after the last committed round as the
// /api/model.json document; ok is false before the first commit.
func (j *joinState) Model() (m site.ModelJSON, ok bool, err error) {
	c := j.c
	snap := c.Model()
	frame, committed, finished, ev := snap.Frame, snap.Committed, snap.Finished, snap.LastEval
	if frame == nil {
		return m, false, nil
	}
	rf, err := wire.DecodeRound(frame, wire.Limits{MaxBytes: len(frame), Dim: c.Config().Session.Dim})
	if err != nil {
		return m, false, err
	}
	for i, v := range rf.X {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return m, false, fmt.Errorf("model coordinate %d is %v", i, v)
		}
	}
	sess := c.Config().Session
	m = site.ModelJSON{Schema: site.ModelSchema, Session: sess, Round: rf.T, Finished: finished && rf.T == committed,
		Model: sess.Model, Features: sess.Features, Classes: sess.Classes, Labels: sess.LabelNames(), Weights: rf.X}
	if m.Labels == nil {
		m.Labels = make([]string, sess.Classes)
		for k := range m.Labels {
			m.Labels[k] = strconv.Itoa(k)
		}
	}
	if sess.Model == "mlp" {
		// d = H*F + H + C*H + C.
		m.Hidden = (sess.Dim - sess.Classes) / (sess.Features + 1 + sess.Classes)
	}
	if ev != nil {
		acc := ev.Accuracy
		m.Accuracy, m.AccuracyRound, m.AccuracySamples = &acc, ev.T, ev.Samples
	}
	return m, true, nil
}

func (j *joinState) serveModelJSON(w http.ResponseWriter, r *http.Request) {
	m, ok, err := j.Model()
	switch {
	case err != nil:
		http.Error(w, "model unavailable", http.StatusInternalServerError)
		return
	case !ok:
		http.Error(w, "no committed round yet", http.StatusNotFound)
		return
	}
	name := m.Session.Name
	if name == "" || strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) {
		name = "session"
	}
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-round%d.model.json"`, name, m.Round))
	site.WriteJSON(w, m)
}
