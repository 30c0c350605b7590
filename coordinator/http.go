package coordinator

import (
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
//	/shard        a demo data shard (join code required; demo only)
//	/             static files from static (index.html, web/, wasm), if non-nil
func (c *Coordinator) Handler(static fs.FS, shards *Shards) http.Handler {
	mux := http.NewServeMux()
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
		mux.HandleFunc("GET /shard", func(w http.ResponseWriter, r *http.Request) {
			code := r.Header.Get("X-Join-Code")
			if code == "" {
				code = r.URL.Query().Get("code")
			}
			if code != c.cfg.JoinCode {
				c.met.authFailures.Add(1)
				http.Error(w, "wrong join code", http.StatusForbidden)
				return
			}
			blob, idx, err := shards.Next(r.URL.Query().Get("device"))
			if err != nil {
				c.log.Error("demo shard", "err", err)
				http.Error(w, "shard unavailable", http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("X-Shard-Index", strconv.Itoa(idx))
			w.Header().Set("X-Shard-Classes", strconv.Itoa(shards.classes))
			w.Write(blob)
		})
	}
	if static != nil {
		mux.Handle("GET /", http.FileServerFS(static))
	}
	return securityHeaders(mux)
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
	Devices   struct {
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

	mu       sync.Mutex
	next     int
	byDevice map[string]int
	blobs    map[int][]byte
}

// NewShards partitions train into k shards with Dirichlet(alpha) label
// proportions (seeded).
func NewShards(train dataset.Set, k int, alpha float64, seed uint64) (*Shards, error) {
	parts, err := dataset.Dirichlet(train.Labels(), k, alpha, seed)
	if err != nil {
		return nil, fmt.Errorf("demo shards: %w", err)
	}
	return &Shards{set: train, parts: parts, classes: train.Classes, byDevice: make(map[string]int), blobs: make(map[int][]byte)}, nil
}

// Next returns the shard for device (a new one, round robin, if device is
// empty or unseen) and its index.
func (s *Shards) Next(deviceID string) ([]byte, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.parts) == 0 {
		return nil, 0, errors.New("no shards")
	}
	idx, ok := s.byDevice[deviceID]
	if !ok || deviceID == "" {
		idx = s.next % len(s.parts)
		s.next++
		if deviceID != "" && len(s.byDevice) < 1<<20 {
			s.byDevice[deviceID] = idx
		}
	}
	if b, ok := s.blobs[idx]; ok {
		return b, idx, nil
	}
	sub, err := s.set.Subset(s.parts[idx])
	if err != nil {
		return nil, 0, err
	}
	b, err := devrt.EncodeShard(sub)
	if err != nil {
		return nil, 0, err
	}
	s.blobs[idx] = b
	return b, idx, nil
}

// Shard returns shard idx as a Set (native devices and tests).
func (s *Shards) Shard(idx int) (dataset.Set, error) {
	if idx < 0 || idx >= len(s.parts) {
		return dataset.Set{}, fmt.Errorf("shard %d of %d", idx, len(s.parts))
	}
	return s.set.Subset(s.parts[idx])
}

