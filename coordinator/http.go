package coordinator

import (
	"crypto/subtle"
	_ "embed"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"browserfl/coordinator/gate"
	"browserfl/coordinator/metrics"
	"browserfl/coordinator/shards"
	"browserfl/coordinator/site"
	"browserfl/coordinator/store"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/plan"
	"browserfl/shared/wire"
)

// Handler returns the coordinator's HTTP handler:
//
//	/ws           device websocket (Origin allowlist, join code in hello)
//	/dashboard    the projector dashboard (embedded; its script and style
//	              at /dashboard.js, /dashboard.css)
//	/api/status   session, devices, open round, privacy, bytes (JSON; ?code=)
//	/api/rounds   committed round records (JSON; ?after=N&code=)
//	/metrics      Prometheus text format (Gate.MetricsToken if set)
//	/healthz      liveness
//	/api/session  the session's public parameters (JSON; ?code= join code)
//	/api/progress committed round and accuracy series (JSON; ?code=)
//	/api/model    the global model as a wire round frame (X = model; ?code=)
//	/api/model.json  the same model as JSON (ModelJSON; ?code=)
//	/api/join-qr.png the join URL as a QR code (?code=&i=N)
//	/api/teacher/{start,pause,resume,end,new}
//	              POST, the teacher's controls (teacher secret; teacher.go)
//	/api/demo/images, /api/demo/labels
//	              a demo shard as raw IDX files (?code=; the same shard for
//	              both, paired by a cookie; demo only; compressed on the wire)
//	/api/demo/rows  a row task's demo shard as CSV (demo only; ?code=)
//	/api/demo/shard
//	              a demo shard as one blob (dataset.DecodeShard; ?code=)
//	/             assets.Index; /web/ assets.Web (page, app.wasm), also
//	              under content-hashed names, compressed (coordinator/site)
//
// Everything that describes the session needs the join code (the
// dashboard passes the one in its own URL); only /healthz, the page and
// its assets do not. Wrong codes go through the gate's per-address
// backoff. Every response carries the headers of site.SecurityHeaders.
func (c *Coordinator) Handler(assets site.Assets, shards *shards.Set) http.Handler {
	mux := http.NewServeMux()
	join := c.newJoin(assets.Join) // join.go: join URLs, QR code, model JSON, store-backed figures
	join.register(mux)
	mux.HandleFunc("GET /api/session", c.WithCode(func(w http.ResponseWriter, r *http.Request) {
		site.WriteJSON(w, c.Session())
	}))
	mux.HandleFunc("GET /api/progress", c.WithCode(func(w http.ResponseWriter, r *http.Request) {
		p, err := c.progress()
		if err != nil {
			http.Error(w, "store error", http.StatusInternalServerError)
			return
		}
		site.WriteJSON(w, p)
	}))
	mux.HandleFunc("GET /api/model", c.WithCode(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		frame := c.modelFrame
		c.mu.Unlock()
		if frame == nil {
			http.Error(w, "no committed round yet", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(frame)
	}))
	mux.HandleFunc("GET /ws", c.front.ServeWS)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if _, _, err := c.store.State(); err != nil {
			http.Error(w, "store unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if !metricsAllowed(c.front, w, r) {
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		c.WriteMetrics(w)
	})
	mux.HandleFunc("GET /api/status", c.WithCode(func(w http.ResponseWriter, r *http.Request) {
		st := c.Status()
		st.Warnings = c.Warnings(shards)
		join.fill(&st, r)
		c.fillProjector(&st, shards)
		ok, answered := c.TeacherAuth(w, r, c.cfg.TeacherSecret)
		if answered {
			return
		}
		if ok {
			st.ForTeacher()
		}
		site.WriteJSON(w, st)
	}))
	c.teacherRoutes(mux)
	mux.HandleFunc("GET /api/rounds", c.WithCode(func(w http.ResponseWriter, r *http.Request) {
		serveRounds(w, r, c.store)
	}))
	site.RegisterDashboard(mux)
	if shards != nil && shards.Rows() {
		// A row task's demo shard: CSV rows, compressed like the
		// pictures (site.EncodedBodies).
		enc := &site.EncodedBodies{}
		mux.HandleFunc("GET /api/demo/rows", c.demoFile(shards, enc, "rows", "text/csv; charset=utf-8", "demo rows unavailable", shards.CSV))
	} else if shards != nil {
		// The demo pictures travel compressed (site.EncodedBodies).
		enc := &site.EncodedBodies{}
		mux.HandleFunc("GET /api/demo/shard", c.WithCode(func(w http.ResponseWriter, r *http.Request) {
			idx := shards.Pick(r)
			blob, err := shards.Blob(idx)
			if err != nil {
				c.front.Log.Error("demo shard", "err", err)
				http.Error(w, "shard unavailable", http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("X-Shard-Index", strconv.Itoa(idx))
			w.Header().Set("X-Shard-Classes", strconv.Itoa(shards.Classes))
			enc.Serve(w, r, "blob/"+strconv.Itoa(idx), blob)
		}))
		for _, part := range []string{"images", "labels"} {
			whole := c.demoFile(shards, enc, part, "application/octet-stream", "shard unavailable",
				func(idx int) ([]byte, error) {
					im, lab, err := shards.IDX(idx)
					if part == "images" {
						return im, err
					}
					return lab, err
				})
			chunk := c.demoChunk(shards, enc, part)
			mux.HandleFunc("GET /api/demo/"+part, func(w http.ResponseWriter, r *http.Request) {
				if shardsRanged(r) {
					chunk(w, r)
					return
				}
				whole(w, r)
			})
		}
	}
	site.RegisterAssets(mux, assets)
	return site.SecurityHeaders(mux)
}

// demoFile serves one file of a page's demo shard: read reads it by shard
// index, enc keeps it compressed under kind/index, and a cookie keeps the
// page on its shard (the images and labels of one page, its rows after a
// reload); unavailable is the 500's text.
func (c *Coordinator) demoFile(sh *shards.Set, enc *site.EncodedBodies, kind, ctype, unavailable string, read func(idx int) ([]byte, error)) http.HandlerFunc {
	return c.WithCode(func(w http.ResponseWriter, r *http.Request) {
		idx := sh.Pick(r)
		body, err := read(idx)
		if err != nil {
			c.front.Log.Error("demo "+kind, "err", err)
			http.Error(w, unavailable, http.StatusInternalServerError)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: shardCookie, Value: strconv.Itoa(idx), Path: "/api/demo/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: 7 * 24 * 3600})
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("X-Shard-Index", strconv.Itoa(idx))
		enc.Serve(w, r, kind+"/"+strconv.Itoa(idx), body)
	})
}

// metricsAllowed checks the metrics token (Gate.MetricsToken) of a
// /metrics request; it answers 401 itself when the token is missing.
func metricsAllowed(f *wsconn.Front, w http.ResponseWriter, r *http.Request) bool {
	tok := f.Gate.Config().MetricsToken
	if tok == "" {
		return true
	}
	got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if got == "" {
		got = r.URL.Query().Get("token")
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(tok)) != 1 {
		f.Met.Reject(metrics.RejMetricsToken)
		w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
		http.Error(w, "metrics token required", http.StatusUnauthorized)
		return false
	}
	return true
}

// WithCode requires the session's join code in ?code= or X-Join-Code,
// checked by the gate (per-address backoff after repeated failures: 429
// with Retry-After).
func (c *Coordinator) WithCode(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		code := r.Header.Get("X-Join-Code")
		if code == "" {
			code = r.URL.Query().Get("code")
		}
		switch v, retry := c.front.Gate.CheckCode(c.front.Gate.ClientAddr(r), code, c.cfg.JoinCode); v {
		case gate.Throttled:
			c.front.Met.Reject(metrics.RejJoinThrottled)
			w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())+1))
			http.Error(w, "too many wrong join codes from this address", http.StatusTooManyRequests)
			return
		case gate.Wrong:
			c.front.Met.AuthFailures.Add(1)
			c.front.Met.Reject(metrics.RejJoinCode)
			http.Error(w, "wrong join code", http.StatusForbidden)
			return
		}
		h(w, r)
	}
}

// Progress is the JSON of /api/progress.
type Progress struct {
	Committed int             `json:"committed"`
	Rounds    int             `json:"rounds"`
	Accuracy  []AccuracyPoint `json:"accuracy"`
}

// AccuracyPoint is one server-side evaluation.
type AccuracyPoint struct {
	Round    int     `json:"round"`
	Accuracy float64 `json:"accuracy"`
	Loss     float64 `json:"loss"`
	// Samples is the number of test samples evaluated (EvalView).
	Samples int `json:"samples"`
}

// serveRounds answers /api/rounds from st.
func serveRounds(w http.ResponseWriter, r *http.Request, st *store.Store) {
	after, _ := strconv.Atoi(r.URL.Query().Get("after"))
	recs, err := st.Rounds(max(after, 0), 1000)
	if err != nil {
		http.Error(w, "store error", http.StatusInternalServerError)
		return
	}
	// Device ids are not secrets, but the dashboard does not need
	// them: publish counts only.
	out := make([]roundView, len(recs))
	for i, rec := range recs {
		out[i] = roundView{T: rec.T, Cohort: len(rec.Cohort), Included: len(rec.Included),
			Started: rec.Started, LatencyMillis: rec.Committed.Sub(rec.Started).Milliseconds(),
			BytesIn: rec.BytesIn, BytesOut: rec.BytesOut, Evaluated: rec.Evaluated,
			Accuracy: rec.Accuracy, Loss: rec.Loss, EvalSamples: rec.EvalSamples, DeadlineHit: rec.DeadlineHit}
	}
	site.WriteJSON(w, out)
}

func (c *Coordinator) progress() (Progress, error) {
	return storeProgress(c.store, c.Committed(), c.Session().Rounds)
}

// storeProgress reads the accuracy series of st.
func storeProgress(st *store.Store, committed, rounds int) (Progress, error) {
	p := Progress{Committed: committed, Rounds: rounds, Accuracy: []AccuracyPoint{}}
	after := 0
	for {
		recs, err := st.Rounds(after, 1000)
		if err != nil {
			return Progress{}, err
		}
		for _, r := range recs {
			if r.Evaluated {
				p.Accuracy = append(p.Accuracy, AccuracyPoint{Round: r.T, Accuracy: r.Accuracy, Loss: r.Loss, Samples: r.EvalSamples})
			}
			after = r.T
		}
		if len(recs) < 1000 {
			return p, nil
		}
	}
}

type roundView struct {
	T             int       `json:"t"`
	Cohort        int       `json:"cohort"`
	Included      int       `json:"included"`
	Started       time.Time `json:"started"`
	LatencyMillis int64     `json:"latency_ms"`
	BytesIn       int64     `json:"bytes_in"`
	BytesOut      int64     `json:"bytes_out"`
	Evaluated     bool      `json:"evaluated"`
	Accuracy      float64   `json:"accuracy,omitempty"`
	Loss          float64   `json:"loss,omitempty"`
	EvalSamples   int       `json:"eval_samples,omitempty"`
	// DeadlineHit: the round closed because its deadline passed
	// (RoundRecord.DeadlineHit).
	DeadlineHit bool `json:"deadline_hit"`
}

// Status is the JSON of /api/status (and what the dashboard draws).
type Status struct {
	Session wire.SessionParams `json:"session"`
	// State is "lobby", "running", "paused" or "ended" (StateLobby...).
	State string `json:"state"`
	// People lists the devices (nickname, state, rounds included; no
	// device id) in the order they joined.
	People []Person `json:"people"`
	// Teacher is true when the request carried the teacher secret (the
	// dashboard then shows the teacher's controls).
	Teacher   bool `json:"teacher"`
	Committed int  `json:"committed"`
	Finished  bool `json:"finished"`
	// Full is true while the coordinator holds as many connections as it
	// admits: a new device would be refused.
	Full    bool `json:"full"`
	Devices struct {
		Connected int `json:"connected"`
		Known     int `json:"known"`
		Eligible  int `json:"eligible"`
		Busy      int `json:"busy"`
		// Left: connected devices that said they stopped (Leave);
		// Stuck: connected devices that did not answer their last
		// rounds and are no longer sampled.
		Left  int `json:"left"`
		Stuck int `json:"stuck"`
	} `json:"devices"`
	MinDevices int `json:"min_devices"`
	// Edges lists the edge processes holding this session's devices
	// (the cluster shape, docs/cluster.md); absent in one process.
	Edges        []EdgeStatus `json:"edges,omitempty"`
	Round        *RoundView   `json:"round,omitempty"`
	LastEval     *EvalView    `json:"last_eval,omitempty"`
	Privacy      PrivacyView  `json:"privacy"`
	BytesIn      int64        `json:"bytes_in"`
	BytesOut     int64        `json:"bytes_out"`
	LatencyP50Ms float64      `json:"latency_p50_ms"`
	LatencyP99Ms float64      `json:"latency_p99_ms"`
	BadFrames    int64        `json:"bad_frames"`
	// UptimeSec counts from the session's start kept in the store.
	UptimeSec float64 `json:"uptime_s"`
	// Warnings say why the class may not finish the planned rounds
	// (PlanWarnings; filled by /api/status).
	Warnings []string `json:"warnings"`
	// Join: the join URLs and the store-backed summary (join.go).
	Join JoinView `json:"join"`
	// Title names the task in words (TaskTitle); Notices are Warnings
	// with plain words for the projector; StartedAt is the lesson's
	// start (the teacher's Start; zero before it) and RunningSec how
	// long it has run since, up to its end (projector.go).
	Title string `json:"title"`
	// Collects says in words what each student's rows hold, for a row
	// task's lobby (TaskCollects); empty for pictures.
	Collects   string    `json:"collects,omitempty"`
	Notices    []Notice  `json:"notices"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	RunningSec float64   `json:"running_s"`
}

// EvalView is one server-side evaluation of the global model: after
// round T, on Samples test samples (a fixed subset of the test set when
// Samples is below its size; 0 in records from before the count was kept).
type EvalView struct {
	T        int     `json:"t"`
	Accuracy float64 `json:"accuracy"`
	Loss     float64 `json:"loss"`
	Samples  int     `json:"samples"`
}

// RoundView is the open round as the dashboard shows it.
type RoundView struct {
	T              int   `json:"t"`
	Cohort         int   `json:"cohort"`
	Received       int   `json:"received"`
	Closed         bool  `json:"closed"`
	DeadlineLeftMs int64 `json:"deadline_left_ms"`
}

// PrivacyView is the dashboard's privacy figures for one device: those
// of plan.SessionFigures at the page's owner delta (plan.DefaultDelta),
// with the text forms every surface prints.
type PrivacyView struct {
	Private  bool    `json:"private"`
	Trusted  bool    `json:"trusted"`
	RhoPaper float64 `json:"rho_p,omitempty"`
	// ZCDPRho is the session's per-device budget (the cap of each
	// device's ledger); WorstRho what one device spends at most, in at
	// most WorstReleases releases.
	ZCDPRho       float64 `json:"zcdp_rho,omitempty"`
	WorstRho      float64 `json:"worst_rho,omitempty"`
	WorstReleases int     `json:"worst_releases,omitempty"`
	// Epsilon is WorstRho at Delta (the owner's delta, not the session's;
	// SessionDelta is the delta the session wrote its target at, if any).
	Epsilon      float64 `json:"epsilon,omitempty"`
	Delta        float64 `json:"delta,omitempty"`
	SessionDelta float64 `json:"session_delta,omitempty"`
	EpsilonText  string  `json:"epsilon_text,omitempty"`
	DeltaText    string  `json:"delta_text,omitempty"`
	RhoText      string  `json:"rho_text,omitempty"`
	Text         string  `json:"text"`
	// MaxParticipations is the most rounds any device of this process
	// was included in.
	MaxParticipations int `json:"max_participations"`
}

// SessionPrivacy returns a session's privacy figures as the dashboard
// shows them (plan.SessionFigures at plan.DefaultDelta).
func SessionPrivacy(sess wire.SessionParams) PrivacyView {
	f, err := plan.SessionFigures(plan.FromSession(sess), plan.DefaultDelta)
	if err != nil {
		return PrivacyView{Text: "figures unavailable: " + err.Error()}
	}
	v := PrivacyView{Private: f.Private, Trusted: f.Trusted, Text: f.Text()}
	if !f.Private {
		return v
	}
	v.RhoPaper, v.ZCDPRho, v.WorstRho, v.WorstReleases = f.RhoPaper, f.BudgetRho, f.WorstRho, f.WorstReleases
	v.Epsilon, v.Delta, v.SessionDelta = f.Epsilon, f.Delta, f.SessionDelta
	v.EpsilonText, v.DeltaText, v.RhoText = f.EpsilonText(), f.DeltaText(), f.RhoText()
	return v
}

// ForTeacher marks s as the teacher's (Teacher: true) and fills what only
// the teacher sees: each person's device id and rejected updates.
func (s *Status) ForTeacher() {
	s.Teacher = true
	for i := range s.People {
		p := &s.People[i]
		p.Device, p.Rejected, p.Rejection = p.teacher.device, p.teacher.rejected, p.teacher.rejection
	}
}

// Status returns a snapshot for the dashboard.
func (c *Coordinator) Status() Status {
	var s Status
	c.mu.Lock()
	s.Session, s.MinDevices, s.State = c.sess, c.minDevices, c.state
	s.People = c.peopleLocked()
	s.Committed, s.Finished = c.committed, c.finished
	node := c.node
	for _, d := range c.devices {
		if d.conn != nil {
			s.Devices.Connected++
			switch {
			case c.eligible(d):
				s.Devices.Eligible++
			case d.left:
				s.Devices.Left++
			case d.misses >= c.front.Lim.MaxMisses:
				s.Devices.Stuck++
			}
		}
		if d.round != 0 {
			s.Devices.Busy++
		}
		s.Privacy.MaxParticipations = max(s.Privacy.MaxParticipations, d.participations)
	}
	s.Devices.Known = len(c.devices)
	s.Full = c.connectedLocked() >= c.front.Lim.MaxDevices
	if or := c.round; or != nil {
		s.Round = &RoundView{T: or.t, Cohort: len(or.cohort), Received: len(or.updates), Closed: or.closed,
			DeadlineLeftMs: max(0, time.Until(or.deadline).Milliseconds())}
	}
	if c.lastEval.Valid {
		s.LastEval = &EvalView{c.lastEval.T, c.lastEval.Accuracy, c.lastEval.Loss, c.lastEval.Samples}
	}
	c.mu.Unlock()
	most := s.Privacy.MaxParticipations
	s.Privacy = SessionPrivacy(s.Session)
	s.Privacy.MaxParticipations = most
	s.BytesIn, s.BytesOut = c.front.Met.BytesIn.Load(), c.front.Met.BytesOut.Load()
	s.LatencyP50Ms = float64(c.front.Met.Quantile(0.5).Microseconds()) / 1000
	s.LatencyP99Ms = float64(c.front.Met.Quantile(0.99).Microseconds()) / 1000
	s.BadFrames = c.front.Met.BadFrames.Load()
	s.UptimeSec = time.Since(c.started).Seconds()
	if node != nil {
		s.Edges = node.Edges()
	}
	return s
}
