package coordinator

import (
	"errors"
	"net/http"
	"strconv"

	"browserfl/coordinator/metrics"
	"browserfl/coordinator/shards"
	"browserfl/coordinator/site"
)

// shardCookie names the cookie that keeps a browser on its demo shard
// (http.go's handlers have a local variable named shards).
const shardCookie = shards.Cookie

// shardsRanged reports whether a demo request asks for a chunk
// (shards.Ranged).
func shardsRanged(r *http.Request) bool { return shards.Ranged(r.URL.Query()) }

// demoChunk serves part ("images" or "labels") of samples from..from+count
// of the page's demo shard (shards.ParseRange) as a raw IDX file,
// compressed, with the shard's size in X-Shard-Samples. Malformed
// parameters are refused with 400, a chunk that starts past the end with
// 416 (the page has the whole shard), both counted
// (browserfl_rejections_total{kind="demo_range"}) before anything else is
// read.
func (c *Coordinator) demoChunk(sh *shards.Set, enc *site.EncodedBodies, part string) http.HandlerFunc {
	return c.WithCode(func(w http.ResponseWriter, r *http.Request) {
		idx := sh.Pick(r)
		n, err := sh.Size(idx)
		if err != nil {
			c.front.Log.Error("demo "+part, "err", err)
			http.Error(w, "shard unavailable", http.StatusInternalServerError)
			return
		}
		from, to, err := shards.ParseRange(r.URL.Query(), n)
		if err != nil {
			c.front.Met.Reject(metrics.RejDemoRange)
			code := http.StatusBadRequest
			if errors.Is(err, shards.ErrRangeEnd) {
				code = http.StatusRequestedRangeNotSatisfiable
			}
			http.Error(w, err.Error(), code)
			return
		}
		im, lab, err := sh.IDXRange(idx, from, to)
		if err != nil {
			c.front.Log.Error("demo "+part, "err", err)
			http.Error(w, "shard unavailable", http.StatusInternalServerError)
			return
		}
		body := im
		if part == "labels" {
			body = lab
		}
		http.SetCookie(w, &http.Cookie{Name: shardCookie, Value: strconv.Itoa(idx), Path: "/api/demo/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: 7 * 24 * 3600})
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("X-Shard-Index", strconv.Itoa(idx))
		w.Header().Set("X-Shard-Samples", strconv.Itoa(n))
		enc.Serve(w, r, part+"/"+strconv.Itoa(idx)+"/"+strconv.Itoa(from)+"-"+strconv.Itoa(to), body)
	})
}
