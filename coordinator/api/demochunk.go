package api

import (
	"errors"
	"math"
	"net/http"
	"strconv"

	"browserfl/coordinator/metrics"
	"browserfl/coordinator/shards"
	"browserfl/coordinator/site"
)

// demoChunk serves part ("images" or "labels") of samples from..from+count
// of the page's demo shard (shards.ParseRange) as a raw IDX file,
// compressed, with the shard's size in X-Shard-Samples. Malformed
// parameters are refused with 400, a chunk that starts past the end with
// 416 (the page has the whole shard), both counted
// (browserfl_rejections_total{kind="demo_range"}) before anything else is
// read; malformed parameters before a shard is handed out, so that bad
// requests cannot use up the distinct shards.
func demoChunk(c Session, sh *shards.Set, enc *site.EncodedBodies, part string) http.HandlerFunc {
	return WithCode(c, func(w http.ResponseWriter, r *http.Request) {
		f := c.Front()
		release, ok := enc.Hold(r)
		if !ok {
			return
		}
		defer release()
		refuse := func(err error) {
			f.Met.Reject(metrics.RejDemoRange)
			code := http.StatusBadRequest
			if errors.Is(err, shards.ErrRangeEnd) {
				code = http.StatusRequestedRangeNotSatisfiable
			}
			http.Error(w, err.Error(), code)
		}
		if _, _, err := shards.ParseRange(r.URL.Query(), math.MaxInt); err != nil {
			refuse(err)
			return
		}
		idx, ok := pick(c, sh, w, r)
		if !ok {
			return
		}
		n, err := sh.Size(idx)
		if err != nil {
			f.Log.Error("demo "+part, "err", err)
			http.Error(w, "shard unavailable", http.StatusInternalServerError)
			return
		}
		from, to, err := shards.ParseRange(r.URL.Query(), n)
		if err != nil {
			refuse(err)
			return
		}
		im, lab, err := sh.IDXRange(idx, from, to)
		if err != nil {
			f.Log.Error("demo "+part, "err", err)
			http.Error(w, "shard unavailable", http.StatusInternalServerError)
			return
		}
		body := im
		if part == "labels" {
			body = lab
		}
		http.SetCookie(w, &http.Cookie{Name: shards.Cookie, Value: strconv.Itoa(idx), Path: "/api/demo/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: 7 * 24 * 3600})
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("X-Shard-Index", strconv.Itoa(idx))
		w.Header().Set("X-Shard-Samples", strconv.Itoa(n))
		out, encoding := enc.Encode(r, part+"/"+strconv.Itoa(idx)+"/"+strconv.Itoa(from)+"-"+strconv.Itoa(to), body)
		release()
		site.WriteEncoded(w, out, encoding)
	})
}

// shardsRanged reports whether a demo request asks for a chunk
// (shards.Ranged; Handler's local variable shadows the package).
func shardsRanged(r *http.Request) bool { return shards.Ranged(r.URL.Query()) }
