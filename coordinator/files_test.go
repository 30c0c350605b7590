package coordinator_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/coder/websocket"

	"browserfl/coordinator"
	"browserfl/coordinator/api"
	"browserfl/coordinator/gate"
	"browserfl/coordinator/internal/nctest"
	"browserfl/coordinator/site"
	"browserfl/coordinator/store"
	"browserfl/coordinator/wsconn"
	"browserfl/device"
	"browserfl/shared/wire"
)

// assetServer serves a coordinator with the given assets on loopback.
func assetServer(t *testing.T, assets site.Assets) *httptest.Server {
	t.Helper()
	sess := testSession(4, 4, 2, 3, 500)
	st, err := store.Open(filepath.Join(t.TempDir(), "coord.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Server: nctest.NewServer(sess.Dim, sess.Cohort, 0.5),
		Store: st, MinDevices: 1000, Seed: 42, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler(c, assets, nil))
	t.Cleanup(srv.Close)
	t.Cleanup(c.Shutdown)
	return srv
}

// TestNoDirectoryListing: over real HTTP, /web/ and every folder under
// it answer 404 without naming a file (plain or gzip), while the files
// are served.
func TestNoDirectoryListing(t *testing.T) {
	srv := assetServer(t, site.Assets{Index: []byte("<!doctype html>"), Web: fstest.MapFS{
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

// TestLookalikeNicknames: over real websockets, a hello whose nickname
// looks like the nickname of a device present is refused with
// wire.CodeNickname and a message a student understands, and counted;
// other names join, stored in NFKC form; once the first device has gone,
// its name is free again.
func TestLookalikeNicknames(t *testing.T) {
	c, srv := gateServer(t, wsconn.Limits{}, gate.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	join := func(nick string) (wire.Message, *websocket.Conn) {
		t.Helper()
		return hello(ctx, t, srv, wire.Hello{Version: wire.Version, JoinCode: "join-me", Nickname: nick})
	}
	m, first := join("Teacher")
	if _, ok := m.(wire.Welcome); !ok {
		t.Fatalf("first Teacher: %#v", m)
	}
	refused := 0
	for _, nick := range []string{"Тeacher", "ТЕАСНЕR", "Ｔｅａｃｈｅｒ", "teacher", "Tea cher"} {
		m, ws := join(nick)
		if ws != nil {
			defer ws.CloseNow()
		}
		e, ok := m.(wire.Error)
		if !ok || e.Code != wire.CodeNickname || e.Reason != "That name is too close to someone else's. Try another." {
			t.Errorf("hello as %q beside Teacher: %#v, want the nickname refusal", nick, m)
		}
		refused++
	}
	m, mia := join("Ｍｉａ")
	if _, ok := m.(wire.Welcome); !ok {
		t.Fatalf("Mia: %#v", m)
	}
	defer mia.CloseNow()
	people := func() map[string]string {
		out := map[string]string{}
		for _, p := range c.Status().People {
			out[p.Nickname] = p.State
		}
		return out
	}
	if p := people(); len(p) != 2 || p["Mia"] == "" || p["Teacher"] == "" {
		t.Errorf("people %v, want Teacher and Mia (NFKC)", p)
	}
	if got := metricInt(t, srv.URL, `browserfl_rejections_total{kind="nickname"}`); got != refused {
		t.Errorf("%d nickname refusals counted, want %d", got, refused)
	}
	first.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "the first Teacher to be gone", func() bool { return people()["Teacher"] == "gone" })
	m, again := join("Тeacher")
	if _, ok := m.(wire.Welcome); !ok {
		t.Errorf("Тeacher after Teacher left: %#v, want a welcome", m)
	}
	if again != nil {
		defer again.CloseNow()
	}
	// The device runtime (the page's and cmd/device's) stops for good on
	// the refusal, with ErrNicknameTaken: the page asks for another name.
	cfg := deviceConfig(t, wsURL(srv), 9, nctest.NewDevice(target(9, 4), 1, 0.3, 9))
	cfg.Nickname = "TEACHER"
	rt, err := device.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Run(ctx); !errors.Is(err, device.ErrNicknameTaken) || !errors.Is(err, device.ErrRefused) {
		t.Errorf("runtime as TEACHER beside Тeacher: %v, want ErrNicknameTaken (and ErrRefused)", err)
	}
}
