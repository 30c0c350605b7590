package api

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"browserfl/coordinator/gate"
	"browserfl/coordinator/metrics"
	"browserfl/coordinator/shards"
	"browserfl/coordinator/site"
	"browserfl/coordinator/store"
	"browserfl/coordinator/view"
	"browserfl/shared/wire"
)

// Handler returns the HTTP handler of session c:
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
func Handler(c Session, assets site.Assets, shards *shards.Set) http.Handler {
	mux := http.NewServeMux()
	join := newJoin(c, assets.Join) // join.go: join URLs, QR code, model JSON, store-backed figures
	join.register(mux)
	mux.HandleFunc("GET /api/session", WithCode(c, func(w http.ResponseWriter, r *http.Request) {
		site.WriteJSON(w, c.Session())
	}))
	mux.HandleFunc("GET /api/progress", WithCode(c, func(w http.ResponseWriter, r *http.Request) {
		p, err := progress(c)
		if err != nil {
			http.Error(w, "store error", http.StatusInternalServerError)
			return
		}
		site.WriteJSON(w, p)
	}))
	mux.HandleFunc("GET /api/model", WithCode(c, func(w http.ResponseWriter, r *http.Request) {
		frame := c.Model().Frame
		if frame == nil {
			http.Error(w, "no committed round yet", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(frame)
	}))
	mux.HandleFunc("GET /ws", c.Front().ServeWS)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if _, _, err := c.Store().State(); err != nil {
			http.Error(w, "store unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if !c.Front().MetricsAllowed(w, r) {
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		c.WriteMetrics(w)
	})
	// statusFor is the status /api/status serves (a teacher's control
	// answers with it too).
	statusFor := func(r *http.Request) view.Status {
		st := c.Status()
		st.Warnings = Warnings(c, shards)
		join.fill(&st, r)
		fillProjector(c, &st, shards)
		return st
	}
	mux.HandleFunc("GET /api/status", WithCode(c, serveStatus(c, statusFor)))
	teacherRoutes(c, mux, statusFor)
	mux.HandleFunc("GET /api/rounds", WithCode(c, func(w http.ResponseWriter, r *http.Request) {
		serveRounds(w, r, c.Store())
	}))
	site.RegisterDashboard(mux)
	if shards != nil && shards.Rows() {
		// A row task's demo shard: CSV rows, compressed like the
		// pictures (site.EncodedBodies).
		enc := &site.EncodedBodies{}
		mux.HandleFunc("GET /api/demo/rows", demoFile(c, shards, enc, "rows", "text/csv; charset=utf-8", "demo rows unavailable", shards.CSV))
	} else if shards != nil {
		// The demo pictures travel compressed (site.EncodedBodies).
		enc := &site.EncodedBodies{}
		mux.HandleFunc("GET /api/demo/shard", WithCode(c, func(w http.ResponseWriter, r *http.Request) {
			release, ok := enc.Hold(r)
			if !ok {
				return
			}
			defer release()
			idx, ok := pick(c, shards, w, r)
			if !ok {
				return
			}
			blob, err := shards.Blob(idx)
			if err != nil {
				c.Front().Log.Error("demo shard", "err", err)
				http.Error(w, "shard unavailable", http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("X-Shard-Index", strconv.Itoa(idx))
			w.Header().Set("X-Shard-Classes", strconv.Itoa(shards.Classes))
			w.Header().Set(wire.DigestHeader, Digest(blob))
			out, encoding := enc.Encode(r, "blob/"+strconv.Itoa(idx), blob)
			release()
			site.WriteEncoded(w, out, encoding)
		}))
		for _, part := range []string{"images", "labels"} {
			whole := demoFile(c, shards, enc, part, "application/octet-stream", "shard unavailable",
				func(idx int) ([]byte, error) {
					im, lab, err := shards.IDX(idx)
					if part == "images" {
						return im, err
					}
					return lab, err
				})
			chunk := demoChunk(c, shards, enc, part)
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
func demoFile(c Session, sh *shards.Set, enc *site.EncodedBodies, kind, ctype, unavailable string, read func(idx int) ([]byte, error)) http.HandlerFunc {
	return WithCode(c, func(w http.ResponseWriter, r *http.Request) {
		release, ok := enc.Hold(r)
		if !ok {
			return
		}
		defer release()
		idx, ok := pick(c, sh, w, r)
		if !ok {
			return
		}
		body, err := read(idx)
		if err != nil {
			c.Front().Log.Error("demo "+kind, "err", err)
			http.Error(w, unavailable, http.StatusInternalServerError)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: shards.Cookie, Value: strconv.Itoa(idx), Path: "/api/demo/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: 7 * 24 * 3600})
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("X-Shard-Index", strconv.Itoa(idx))
		w.Header().Set(wire.DigestHeader, Digest(body))
		out, encoding := enc.Encode(r, kind+"/"+strconv.Itoa(idx), body)
		release()
		site.WriteEncoded(w, out, encoding)
	})
}

// allowed takes a token of take (a gate bucket of the client's address)
// for r; without one it answers 429 (retry in a second) and counts it.
func allowed(c Session, w http.ResponseWriter, r *http.Request, take func(addr string) bool) bool {
	f := c.Front()
	if take(f.Gate.ClientAddr(r)) {
		return true
	}
	f.Met.Reject(metrics.RejAPIRate)
	w.Header().Set("Retry-After", "1")
	http.Error(w, "too many requests from this address: try again in a moment", http.StatusTooManyRequests)
	return false
}

// pick is sh.Pick(r), but a new shard (r has no cookie of one dealt) only
// within the address's rate of new shards (gate.State.Deal).
func pick(c Session, sh *shards.Set, w http.ResponseWriter, r *http.Request) (int, bool) {
	if !sh.Kept(r) && !allowed(c, w, r, c.Front().Gate.Deal) {
		return 0, false
	}
	return sh.Pick(r), true
}

// Digest is the hex SHA-256 of b, as wire.DigestHeader states it.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// WithCode requires the session's join code in ?code= or X-Join-Code,
// checked by the gate (per-address backoff after repeated failures: 429
// with Retry-After).
func WithCode(c Session, h http.HandlerFunc) http.HandlerFunc {
	f, joinCode := c.Front(), c.Config().JoinCode
	return func(w http.ResponseWriter, r *http.Request) {
		code := r.Header.Get("X-Join-Code")
		if code == "" {
			code = r.URL.Query().Get("code")
		}
		switch v, retry := f.Gate.CheckCode(f.Gate.ClientAddr(r), code, joinCode); v {
		case gate.Throttled:
			f.Met.Reject(metrics.RejJoinThrottled)
			w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())+1))
			http.Error(w, "too many wrong join codes from this address", http.StatusTooManyRequests)
			return
		case gate.Wrong:
			f.Met.AuthFailures.Add(1)
			f.Met.Reject(metrics.RejJoinCode)
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

// serveStatus answers /api/status with statusFor's status, the teacher's
// view with the teacher secret; without it, within the address's rate
// (gate.State.Read).
func serveStatus(c Session, statusFor func(*http.Request) view.Status) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ok, answered := TeacherAuth(c, w, r, c.Config().TeacherSecret)
		if answered {
			return
		}
		// The teacher's dashboard is never held back.
		if !ok && !allowed(c, w, r, c.Front().Gate.Read) {
			return
		}
		st := statusFor(r)
		if ok {
			st.ForTeacher(c.Config().TeacherAlgorithms)
		}
		site.WriteJSON(w, st)
	}
}

// queryInt reads the whole number ?name= of r (0 when absent); a value
// that is not one is answered 400 and ok is false.
func queryInt(w http.ResponseWriter, r *http.Request, name string) (n int, ok bool) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, true
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		http.Error(w, name+" must be a whole number", http.StatusBadRequest)
		return 0, false
	}
	return n, true
}

// serveRounds answers /api/rounds from st.
func serveRounds(w http.ResponseWriter, r *http.Request, st *store.Store) {
	after, ok := queryInt(w, r, "after")
	if !ok {
		return
	}
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

func progress(c Session) (Progress, error) {
	return storeProgress(c.Store(), c.Committed(), c.Session().Rounds)
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
