package coordinator

import (
	"bytes"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	devrt "browserfl/device"
	"browserfl/shared/dataset"
	"browserfl/shared/privacy"
	"browserfl/shared/wire"
)

//go:embed dashboard.html
var dashboardHTML []byte

// Handler returns the coordinator's HTTP handler:
//
//	/ws           device websocket (Origin allowlist, join code in hello)
//	/dashboard    the projector dashboard (embedded)
//	/api/status   session, devices, open round, privacy, bytes (JSON)
//	/api/rounds   committed round records (JSON; ?after=N)
//	/metrics      Prometheus text format
//	/healthz      liveness
//	/api/session  the session's public parameters (JSON; ?code= join code)
//	/api/progress committed round and accuracy series (JSON; ?code=)
//	/api/model    the global model as a wire round frame (X = model; ?code=)
//	/api/demo/images, /api/demo/labels
//	              a demo shard as raw IDX files (?code=; the same shard for
//	              both, paired by a cookie; demo only)
//	/api/demo/shard
//	              a demo shard as one blob (device.DecodeShard; ?code=)
//	/             assets.Index; /web/ assets.Web (page, app.wasm)
func (c *Coordinator) Handler(assets Assets, shards *Shards) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/session", c.withCode(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, c.cfg.Session)
	}))
	mux.HandleFunc("GET /api/progress", c.withCode(func(w http.ResponseWriter, r *http.Request) {
		p, err := c.progress()
		if err != nil {
			http.Error(w, "store error", http.StatusInternalServerError)
			return
		}
		writeJSON(w, p)
	}))
	mux.HandleFunc("GET /api/model", c.withCode(func(w http.ResponseWriter, r *http.Request) {
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
	mux.HandleFunc("GET /ws", c.ServeWS)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if _, _, err := c.store.State(); err != nil {
			http.Error(w, "store unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		c.WriteMetrics(w)
	})
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, c.Status())
	})
	mux.HandleFunc("GET /api/rounds", func(w http.ResponseWriter, r *http.Request) {
		after, _ := strconv.Atoi(r.URL.Query().Get("after"))
		recs, err := c.store.Rounds(max(after, 0), 1000)
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
				Accuracy: rec.Accuracy, Loss: rec.Loss}
		}
		writeJSON(w, out)
	})
	mux.HandleFunc("GET /dashboard", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'")
		w.Write(dashboardHTML)
	})
	if shards != nil {
		mux.HandleFunc("GET /api/demo/shard", c.withCode(func(w http.ResponseWriter, r *http.Request) {
			idx := shards.pick(r)
			blob, err := shards.blob(idx)
			if err != nil {
				c.log.Error("demo shard", "err", err)
				http.Error(w, "shard unavailable", http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("X-Shard-Index", strconv.Itoa(idx))
			w.Header().Set("X-Shard-Classes", strconv.Itoa(shards.classes))
			w.Write(blob)
		}))
		for _, part := range []string{"images", "labels"} {
			mux.HandleFunc("GET /api/demo/"+part, c.withCode(func(w http.ResponseWriter, r *http.Request) {
				idx := shards.pick(r)
				im, lab, err := shards.idx(idx)
				if err != nil {
					c.log.Error("demo shard", "err", err)
					http.Error(w, "shard unavailable", http.StatusInternalServerError)
					return
				}
				http.SetCookie(w, &http.Cookie{Name: shardCookie, Value: strconv.Itoa(idx), Path: "/api/demo/",
					HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: 7 * 24 * 3600})
				w.Header().Set("Content-Type", "application/octet-stream")
				w.Header().Set("X-Shard-Index", strconv.Itoa(idx))
				if part == "images" {
					w.Write(im)
				} else {
					w.Write(lab)
				}
			}))
		}
	}
	if assets.Web != nil {
		mux.Handle("GET /web/", http.StripPrefix("/web/", newGzipAssets(assets.Web)))
	}
	if assets.Index != nil {
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write(assets.Index)
		})
	}
	return securityHeaders(mux)
}

// Assets are the page the coordinator serves: index.html at / and the
// web/ directory (style, loader, app.wasm) under /web/.
type Assets struct {
	Index []byte
	Web   fs.FS
}

// withCode requires the session's join code in ?code= or X-Join-Code.
func (c *Coordinator) withCode(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		code := r.Header.Get("X-Join-Code")
		if code == "" {
			code = r.URL.Query().Get("code")
		}
		if subtle.ConstantTimeCompare([]byte(code), []byte(c.cfg.JoinCode)) != 1 {
			c.met.authFailures.Add(1)
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
}

func (c *Coordinator) progress() (Progress, error) {
	p := Progress{Committed: c.Committed(), Rounds: c.cfg.Session.Rounds, Accuracy: []AccuracyPoint{}}
	after := 0
	for {
		recs, err := c.store.Rounds(after, 1000)
		if err != nil {
			return Progress{}, err
		}
		for _, r := range recs {
			if r.Evaluated {
				p.Accuracy = append(p.Accuracy, AccuracyPoint{Round: r.T, Accuracy: r.Accuracy, Loss: r.Loss})
			}
			after = r.T
		}
		if len(recs) < 1000 {
			return p, nil
		}
	}
}

func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.Encode(v)
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
}

// Status is the JSON of /api/status (and what the dashboard draws).
type Status struct {
	Session   wire.SessionParams `json:"session"`
	Committed int                `json:"committed"`
	Finished  bool               `json:"finished"`
	// Full is true while the coordinator holds as many connections as it
	// admits: a new device would be refused.
	Full    bool `json:"full"`
	Devices struct {
		Connected int `json:"connected"`
		Known     int `json:"known"`
		Eligible  int `json:"eligible"`
		Busy      int `json:"busy"`
	} `json:"devices"`
	MinDevices int        `json:"min_devices"`
	Round      *RoundView `json:"round,omitempty"`
	LastEval   *struct {
		T        int     `json:"t"`
		Accuracy float64 `json:"accuracy"`
		Loss     float64 `json:"loss"`
	} `json:"last_eval,omitempty"`
	Privacy struct {
		Private  bool    `json:"private"`
		Trusted  bool    `json:"trusted"`
		RhoPaper float64 `json:"rho_p,omitempty"`
		ZCDPRho  float64 `json:"zcdp_rho,omitempty"`
		Epsilon  float64 `json:"epsilon,omitempty"`
		Delta    float64 `json:"delta,omitempty"`
		// MaxParticipations is the most rounds any device of this
		// process was included in.
		MaxParticipations int `json:"max_participations"`
	} `json:"privacy"`
	BytesIn      int64   `json:"bytes_in"`
	BytesOut     int64   `json:"bytes_out"`
	LatencyP50Ms float64 `json:"latency_p50_ms"`
	LatencyP99Ms float64 `json:"latency_p99_ms"`
	BadFrames    int64   `json:"bad_frames"`
	UptimeSec    float64 `json:"uptime_s"`
}

// RoundView is the open round as the dashboard shows it.
type RoundView struct {
	T              int   `json:"t"`
	Cohort         int   `json:"cohort"`
	Received       int   `json:"received"`
	Closed         bool  `json:"closed"`
	DeadlineLeftMs int64 `json:"deadline_left_ms"`
}

// Status returns a snapshot for the dashboard.
func (c *Coordinator) Status() Status {
	var s Status
	s.Session = c.cfg.Session
	s.MinDevices = c.cfg.MinDevices
	c.mu.Lock()
	s.Committed, s.Finished = c.committed, c.finished
	for _, d := range c.devices {
		if d.conn != nil {
			s.Devices.Connected++
			if d.round == 0 {
				s.Devices.Eligible++
			}
		}
		if d.round != 0 {
			s.Devices.Busy++
		}
		s.Privacy.MaxParticipations = max(s.Privacy.MaxParticipations, d.participations)
	}
	s.Devices.Known = len(c.devices)
	s.Full = c.connectedLocked() >= c.lim.MaxDevices
	if or := c.round; or != nil {
		s.Round = &RoundView{T: or.t, Cohort: len(or.cohort), Received: len(or.updates), Closed: or.closed,
			DeadlineLeftMs: max(0, time.Until(or.deadline).Milliseconds())}
	}
	if c.lastEval.Valid {
		s.LastEval = &struct {
			T        int     `json:"t"`
			Accuracy float64 `json:"accuracy"`
			Loss     float64 `json:"loss"`
		}{c.lastEval.T, c.lastEval.Accuracy, c.lastEval.Loss}
	}
	c.mu.Unlock()
	p := devrt.Params(c.cfg.Session)
	s.Privacy.Private, s.Privacy.Trusted = p.Private(), p.Trusted()
	if s.Privacy.Private {
		s.Privacy.RhoPaper = p.Rho
		s.Privacy.Delta = p.Delta
		if s.Privacy.Delta == 0 {
			s.Privacy.Delta = 1e-5
		}
		if rho, err := p.ZCDPBudget(); err == nil {
			s.Privacy.ZCDPRho = rho
			if eps, err := privacy.ZCDPToEpsilon(rho, s.Privacy.Delta); err == nil && !math.IsInf(eps, 0) {
				s.Privacy.Epsilon = eps
			}
		}
	}
	s.BytesIn, s.BytesOut = c.met.bytesIn.Load(), c.met.bytesOut.Load()
	s.LatencyP50Ms = float64(c.met.quantile(0.5).Microseconds()) / 1000
	s.LatencyP99Ms = float64(c.met.quantile(0.99).Microseconds()) / 1000
	s.BadFrames = c.met.badFrames.Load()
	s.UptimeSec = time.Since(c.started).Seconds()
	return s
}

// Shards hands out non-IID demo shards of a training set (Dirichlet label
// skew): demo only, a real deployment has the data on the device. A
// device that names itself gets the same shard again.
type Shards struct {
	set     dataset.Set
	parts   [][]int
	classes int

	mu    sync.Mutex
	next  int
	cache map[int]shardFiles
}

// NewShards partitions train into k shards with Dirichlet(alpha) label
// proportions (seeded).
func NewShards(train dataset.Set, k int, alpha float64, seed uint64) (*Shards, error) {
	parts, err := dataset.Dirichlet(train.Labels(), k, alpha, seed)
	if err != nil {
		return nil, fmt.Errorf("demo shards: %w", err)
	}
	return &Shards{set: train, parts: parts, classes: train.Classes, cache: make(map[int]shardFiles)}, nil
}

const shardCookie = "bfl_demo_shard"

// pick returns the shard index for a request: the one in its cookie if
// valid, else the next one round robin.
func (s *Shards) pick(r *http.Request) int {
	if ck, err := r.Cookie(shardCookie); err == nil {
		if i, err := strconv.Atoi(ck.Value); err == nil && i >= 0 && i < len(s.parts) {
			return i
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.next % len(s.parts)
	s.next++
	return i
}

type shardFiles struct{ blob, images, labels []byte }

func (s *Shards) files(idx int) (shardFiles, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.cache[idx]; ok {
		return f, nil
	}
	if idx < 0 || idx >= len(s.parts) {
		return shardFiles{}, errors.New("no such shard")
	}
	sub, err := s.set.Subset(s.parts[idx])
	if err != nil {
		return shardFiles{}, err
	}
	im, lab, err := sub.EncodeIDX()
	if err != nil {
		return shardFiles{}, err
	}
	var a, b bytes.Buffer
	if err := dataset.WriteIDX(&a, im); err != nil {
		return shardFiles{}, err
	}
	if err := dataset.WriteIDX(&b, lab); err != nil {
		return shardFiles{}, err
	}
	blob, err := devrt.EncodeShard(sub)
	if err != nil {
		return shardFiles{}, err
	}
	f := shardFiles{blob: blob, images: a.Bytes(), labels: b.Bytes()}
	s.cache[idx] = f
	return f, nil
}

func (s *Shards) blob(idx int) ([]byte, error) {
	f, err := s.files(idx)
	return f.blob, err
}

func (s *Shards) idx(idx int) (images, labels []byte, err error) {
	f, err := s.files(idx)
	return f.images, f.labels, err
}

// Len returns the number of shards.
func (s *Shards) Len() int { return len(s.parts) }

// Shard returns shard idx as a Set (native devices and tests).
func (s *Shards) Shard(idx int) (dataset.Set, error) {
	if idx < 0 || idx >= len(s.parts) {
		return dataset.Set{}, fmt.Errorf("shard %d of %d", idx, len(s.parts))
	}
	return s.set.Subset(s.parts[idx])
}
