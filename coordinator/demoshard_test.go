package coordinator_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"browserfl/coordinator/api"
	"browserfl/coordinator/gate"
	"browserfl/coordinator/metrics"
	"browserfl/coordinator/shards"
	"browserfl/coordinator/site"
	"browserfl/shared/dataset"
	"browserfl/shared/wire"
)

// idSet is a training set of n one-feature samples whose feature names the
// sample (i/n), with unequal classes, so that shards can be checked for
// overlap by value.
func idSet(n int) dataset.Set {
	s := dataset.Set{Name: "ids", Features: 1, Classes: 10, Samples: make([]dataset.Sample, n)}
	for i := range s.Samples {
		s.Samples[i] = dataset.Sample{X: []float32{float32(i) / float32(n)}, Label: (i * 7 / 3) % 10}
	}
	return s
}

// demoAPI is the API of a test session (testSession(4, 4, 2, 3, 500),
// two devices) that deals demo shards of idSet(100), T x b = 15 samples
// each for a page that comes at round 0.
type demoAPI struct {
	t    *testing.T
	h    *harness
	sess wire.SessionParams
	sh   *shards.Set
	url  string
}

// newDemoAPI serves it until the test ends; committed gives the rounds
// committed when a shard is dealt (nil: 0).
func newDemoAPI(t *testing.T, committed func() int) *demoAPI {
	t.Helper()
	sess := testSession(4, 4, 2, 3, 500)
	h := newHarness(t, sess, 2)
	sh, err := shards.New(idSet(100), shards.Config{Classes: 10, Rounds: sess.Rounds, Batch: 5, Alpha: 0.5, Seed: 1,
		Max: 8, Committed: committed})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler(h.coord, site.Assets{}, sh))
	t.Cleanup(srv.Close)
	return &demoAPI{t: t, h: h, sess: sess, sh: sh, url: srv.URL}
}

// get asks path with the cookies and returns the answer with its body
// read.
func (d *demoAPI) get(path string, cookies []*http.Cookie) (*http.Response, []byte) {
	d.t.Helper()
	req, _ := http.NewRequest("GET", d.url+path, nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		d.t.Fatal(err)
	}
	return resp, b
}

// TestDemoShardHTTP: a page gets one shard for its images and labels
// (paired by the cookie) sized T x b, a second page another one, and
// /api/status carries the plan warnings.
func TestDemoShardHTTP(t *testing.T) {
	committed := 0
	d := newDemoAPI(t, func() int { return committed })
	sess, sh := d.sess, d.sh
	get := func(path string, cookies []*http.Cookie) (*http.Response, []byte) {
		t.Helper()
		resp, b := d.get(path, cookies)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: HTTP %d", path, resp.StatusCode)
		}
		return resp, b
	}
	im, images := get("/api/demo/images?code=join-me", nil)
	lab, labels := get("/api/demo/labels?code=join-me", im.Cookies())
	if a, b := im.Header.Get("X-Shard-Index"), lab.Header.Get("X-Shard-Index"); a != "0" || b != "0" {
		t.Errorf("images from shard %s, labels from shard %s; want both 0", a, b)
	}
	// 3 rounds x 5 = 15 samples: IDX headers of 12 (images, [n 1]) and 8
	// (labels, [n]) bytes, one byte each.
	if len(images) != 12+15 || len(labels) != 8+15 {
		t.Errorf("shard files of %d and %d bytes, want %d and %d (15 samples)", len(images), len(labels), 12+15, 8+15)
	}
	committed = 2
	blob, _ := get("/api/demo/shard?code=join-me", nil)
	if got := blob.Header.Get("X-Shard-Index"); got != "1" {
		t.Errorf("second page got shard %s, want 1", got)
	}
	if s, err := sh.Shard(1); err != nil || s.Len() != 5 {
		t.Errorf("a page after 2 of 3 rounds: %d samples (%v), want 5", s.Len(), err)
	}
	var st struct {
		Warnings []string `json:"warnings"`
	}
	_, body := get("/api/status?code=join-me", nil)
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Warnings) != 1 || st.Warnings[0] != api.PlanWarnings(api.PlanInput{
		Rounds: 3, Batch: sess.Batch, Cohort: 2, MinDevices: 2, Shards: sh.Stats()})[0].Text {
		t.Errorf("status warnings %q, want the one about no device connected", st.Warnings)
	}
}

// TestAPIRates: one address gets new demo shards at the rate it may
// register new devices (burst 60, then about 1 a second) and the status
// at gate.ReadRate (burst gate.ReadBurst): past them, 429 with
// Retry-After, counted as api_rate; a page with its shard's cookie is
// never held back. Each hand-out past the bound would make, encode and
// cache one more shard at the coordinator's cost.
func TestAPIRates(t *testing.T) {
	d := newDemoAPI(t, nil)
	get := func(path string, cookies []*http.Cookie) *http.Response {
		t.Helper()
		resp, _ := d.get(path, cookies)
		return resp
	}
	// The rates refill as the test runs (a loaded machine is slow), so
	// the test asks until the first refusal: within 1,000 requests it must
	// come (the bursts are 60 and gate.ReadBurst, the rates 1 and
	// gate.ReadRate a second), and every refusal is counted.
	refused := 0
	firstPast := func(what, path string) int {
		t.Helper()
		for i := range 1000 {
			r := get(path, nil)
			switch r.StatusCode {
			case http.StatusOK:
				continue
			case http.StatusTooManyRequests:
				if r.Header.Get("Retry-After") == "" {
					t.Fatalf("%s: 429 without Retry-After", what)
				}
				refused++
				return i
			default:
				t.Fatalf("%s: HTTP %d", what, r.StatusCode)
			}
		}
		t.Fatalf("%s: 1,000 requests from one address, none refused", what)
		return 0
	}
	first := get("/api/demo/images?code=join-me", nil)
	if n := firstPast("new demo shards", "/api/demo/shard?code=join-me"); n < 59 {
		t.Errorf("new demo shards refused after %d, want the burst of 60 first", n+1)
	}
	if r := get("/api/demo/labels?code=join-me", first.Cookies()); r.StatusCode != http.StatusOK {
		t.Fatalf("a page with its cookie past the burst: HTTP %d", r.StatusCode)
	}
	if n := firstPast("status", "/api/status?code=join-me"); n < gate.ReadBurst {
		t.Errorf("status refused after %d, want the burst of %d first", n, gate.ReadBurst)
	}
	if n := d.h.coord.Front().Met.Rejections[metrics.RejAPIRate].Load(); n != int64(refused) {
		t.Errorf("%d refusals counted as api_rate, want %d", n, refused)
	}
}
