package coordinator_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"browserfl/coordinator/api"
	"browserfl/coordinator/gate"
	"browserfl/coordinator/site"
	"browserfl/coordinator/wsconn"
)

// TestWorkerPolicy: the page may start a worker of its own origin, and
// the worker's script comes with its own policy, which lets it load the
// Go loader, compile WebAssembly and fetch from its own origin, and
// nothing more (no eval, no websocket: the page opens it for the worker,
// no other origin); other assets keep the default.
func TestWorkerPolicy(t *testing.T) {
	c, _ := gateServer(t, wsconn.Limits{}, gate.Config{})
	web := fstest.MapFS{
		"worker.js": {Data: []byte(`importScripts("wasm_exec.js");`)},
		"app.js":    {Data: []byte(`new Worker("/web/worker.js");`)},
	}
	srv := httptest.NewServer(api.Handler(c, site.Assets{Index: []byte("<!doctype html>"), Web: web}, nil))
	defer srv.Close()
	get := func(path string) (string, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", path, resp.Status)
		}
		return resp.Header.Get("Content-Security-Policy"), string(b)
	}
	directive := func(csp, name string) string {
		for _, d := range strings.Split(csp, ";") {
			if d = strings.TrimSpace(d); strings.HasPrefix(d, name+" ") {
				return d
			}
		}
		return ""
	}
	page, _ := get("/")
	if d := directive(page, "worker-src"); d != "worker-src 'self'" {
		t.Errorf("page: %q, want worker-src 'self'", d)
	}
	worker, body := get("/web/worker.js")
	if !strings.Contains(body, "importScripts") {
		t.Errorf("worker.js served %q", body)
	}
	for _, tc := range []struct{ name, want string }{
		{"default-src", "default-src 'none'"},
		{"script-src", "script-src 'self' 'wasm-unsafe-eval'"},
		{"connect-src", "connect-src 'self'"},
	} {
		if d := directive(worker, tc.name); d != tc.want {
			t.Errorf("worker: %q, want %q (policy %q)", d, tc.want, worker)
		}
	}
	if other, _ := get("/web/app.js"); other != "frame-ancestors 'none'" {
		t.Errorf("app.js policy %q", other)
	}
}
