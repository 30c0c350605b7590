package coordinator_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"testing/fstest"

	"browserfl/coordinator"
	"browserfl/coordinator/internal/nctest"
)

// assetServer serves a coordinator with the given assets on loopback.
func assetServer(t *testing.T, assets coordinator.Assets) *httptest.Server {
	t.Helper()
	sess := testSession(4, 4, 2, 3, 500)
	st, err := coordinator.OpenStore(filepath.Join(t.TempDir(), "coord.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Server: nctest.NewServer(sess.Dim, sess.Cohort, 0.5),
		Store: st, MinDevices: 1000, Seed: 42, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler(assets, nil))
	t.Cleanup(srv.Close)
	t.Cleanup(c.Shutdown)
	return srv
}

// TestNoDirectoryListing: over real HTTP, /web/ and every folder under
// it answer 404 without naming a file (plain or gzip), while the files
// are served.
func TestNoDirectoryListing(t *testing.T) {
	srv := assetServer(t, coordinator.Assets{Index: []byte("<!doctype html>"), Web: fstest.MapFS{
		"app.js":          {Data: []byte("// app")},
		"secret-name.txt": {Data: []byte("x")},
		"sub/inner.js":    {Data: []byte("// inner")},
		"sub/index.html":  {Data: []byte("<p>index</p>")},
	}})
	for _, path := range []string{"/web/", "/web/sub/", "/web/sub", "/web/.", "/web/sub/.."} {
		for _, enc := range []string{"", "gzip"} {
			req, _ := http.NewRequest("GET", srv.URL+path, nil)
			req.Header.Set("Accept-Encoding", enc) // "" sends "Accept-Encoding:": no transparent gzip
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound || bytes.Contains(body, []byte("secret-name")) ||
				bytes.Contains(body, []byte("inner.js")) || bytes.Contains(body, []byte("index")) {
				t.Errorf("GET %s (Accept-Encoding %q): %d %q, want 404 without a listing", path, enc, resp.StatusCode, body)
			}
		}
	}
	for _, path := range []string{"/web/app.js", "/web/sub/inner.js"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d, want 200", path, resp.StatusCode)
		}
	}
}
