package coordinator_test

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"browserfl/coordinator"
	"browserfl/coordinator/api"
	"browserfl/coordinator/gate"
	"browserfl/coordinator/internal/nctest"
	"browserfl/coordinator/site"
	"browserfl/coordinator/store"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/wire"
)

// gateServer serves a coordinator with the given limits and gate on
// loopback (no round ever starts: min devices is above what the tests
// connect).
func gateServer(t *testing.T, lim wsconn.Limits, gate gate.Config) (*coordinator.Coordinator, *httptest.Server) {
	t.Helper()
	sess := testSession(4, 4, 2, 3, 500)
	st, err := store.Open(filepath.Join(t.TempDir(), "coord.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Server: nctest.NewServer(sess.Dim, sess.Cohort, 0.5),
		Store: st, MinDevices: 1000, Seed: 42, Logger: quietLogger(), Limits: lim, Gate: gate})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler(c, site.Assets{Index: []byte("<!doctype html><title>page</title>")}, nil))
	t.Cleanup(srv.Close)
	t.Cleanup(c.Shutdown)
	return c, srv
}

func wsURL(srv *httptest.Server) string { return "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws" }

// hello dials, sends h and returns the first message and, if the
// coordinator closed the connection, the error code it gave.
func hello(ctx context.Context, t *testing.T, srv *httptest.Server, h wire.Hello) (wire.Message, *websocket.Conn) {
	t.Helper()
	ws, _, err := websocket.Dial(ctx, wsURL(srv), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := wire.EncodeControl(h)
	if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	_, b, err = ws.Read(ctx)
	if err != nil {
		ws.CloseNow()
		return nil, nil
	}
	m, err := wire.DecodeControl(b)
	if err != nil {
		t.Fatal(err)
	}
	return m, ws
}

func metricInt(t *testing.T, base, name string) int {
	t.Helper()
	v, err := strconv.ParseFloat(metric(t, base, name), 64)
	if err != nil {
		t.Fatal(err)
	}
	return int(v)
}

// waitMetric polls name until ok(value) or the deadline.
func waitMetric(t *testing.T, base, name string, ok func(int) bool) int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		v := metricInt(t, base, name)
		if ok(v) || time.Now().After(deadline) {
			return v
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const (
	rejJoinCode  = `browserfl_rejections_total{kind="join_code"}`
	rejThrottled = `browserfl_rejections_total{kind="join_throttled"}`
)

// TestJoinCodeGuessing: 200 wrong codes from one address, over the
// websocket and over HTTP, are checked only a handful of times; the rest
// are refused unchecked (even a right code while the pause lasts), and
// both kinds are counted.
func TestJoinCodeGuessing(t *testing.T) {
	_, srv := gateServer(t, wsconn.Limits{}, gate.Config{JoinFreeFailures: 3, JoinBackoff: time.Second, JoinBackoffMax: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	codes := map[string]int{}
	for i := range 100 {
		m, ws := hello(ctx, t, srv, wire.Hello{Version: wire.Version, JoinCode: fmt.Sprintf("guess-%d", i)})
		if ws != nil {
			ws.CloseNow()
		}
		if e, ok := m.(wire.Error); ok {
			codes[e.Code]++
		} else {
			codes[fmt.Sprintf("%T", m)]++
		}
	}
	http429, http403 := 0, 0
	for i := range 100 {
		resp, err := http.Get(fmt.Sprintf("%s/api/session?code=guess-%d", srv.URL, i))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusTooManyRequests:
			http429++
			if resp.Header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
		case http.StatusForbidden:
			http403++
		default:
			t.Fatalf("wrong code answered %d", resp.StatusCode)
		}
	}
	checked := codes[wire.CodeJoinCode] + http403
	t.Logf("websocket: %v; HTTP: %d checked, %d throttled", codes, http403, http429)
	// 3 free failures and a pause of 1, 2, 4, ... s: whatever the speed
	// of this machine, a 200-attempt burst gets only a few checks.
	if checked > 3+6 || codes[wire.CodeRate]+http429 < 190 {
		t.Errorf("%d of 200 wrong codes were checked, want a handful", checked)
	}
	if got := metricInt(t, srv.URL, rejJoinCode); got != checked {
		t.Errorf("join_code rejections = %d, want %d", got, checked)
	}
	if got := metricInt(t, srv.URL, rejThrottled); got != 200-checked {
		t.Errorf("join_throttled rejections = %d, want %d", got, 200-checked)
	}
	// The right code from the same address waits for the pause too.
	if m, ws := hello(ctx, t, srv, wire.Hello{Version: wire.Version, JoinCode: "join-me"}); ws != nil {
		ws.CloseNow()
		if e, ok := m.(wire.Error); !ok || e.Code != wire.CodeRate {
			t.Errorf("right code during the pause: %#v", m)
		}
	}
}

// TestRegistrationFlood: hellos without a device id beyond the
// per-address burst are refused and counted; inactive devices beyond the
// cap are forgotten in memory but can resume with their secret.
func TestRegistrationFlood(t *testing.T) {
	_, srv := gateServer(t, wsconn.Limits{}, gate.Config{RegisterRate: 0.001, RegisterBurst: 10, MaxInactive: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var welcomes []wire.Welcome
	refused := 0
	for range 50 {
		m, ws := hello(ctx, t, srv, wire.Hello{Version: wire.Version, JoinCode: "join-me"})
		switch m := m.(type) {
		case wire.Welcome:
			welcomes = append(welcomes, m)
			ws.Close(websocket.StatusNormalClosure, "")
		case wire.Error:
			if m.Code != wire.CodeRate {
				t.Fatalf("refused with %q", m.Code)
			}
			refused++
			ws.CloseNow()
		default:
			t.Fatalf("got %T", m)
		}
	}
	if len(welcomes) != 10 || refused != 40 {
		t.Fatalf("%d registered, %d refused; want 10 and 40", len(welcomes), refused)
	}
	if got := metricInt(t, srv.URL, `browserfl_rejections_total{kind="register_throttled"}`); got != 40 {
		t.Errorf("register_throttled = %d, want 40", got)
	}
	if got := metricInt(t, srv.URL, "browserfl_devices_registered_total"); got != 10 {
		t.Errorf("registered = %d, want 10", got)
	}
	// All ten disconnected: at most three stay in memory.
	if got := waitMetric(t, srv.URL, "browserfl_devices_evicted_total", func(v int) bool { return v >= 7 }); got < 7 {
		t.Errorf("evicted = %d, want >= 7", got)
	}
	if got := metricInt(t, srv.URL, "browserfl_devices_known"); got > 3 {
		t.Errorf("%d devices kept in memory, cap 3", got)
	}
	// An evicted device (the first) resumes with its secret: the store
	// record stayed, and resuming is not a registration.
	w := welcomes[0]
	m, ws := hello(ctx, t, srv, wire.Hello{Version: wire.Version, JoinCode: "join-me", DeviceID: w.DeviceID, Secret: w.Secret})
	if _, ok := m.(wire.Welcome); !ok {
		t.Fatalf("evicted device could not resume: %#v", m)
	}
	ws.CloseNow()
}

// TestPreHelloCounts: websockets that have not said hello count against
// the device limit and against the per-address limit.
func TestPreHelloCounts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name   string
		lim    wsconn.Limits
		gate   gate.Config
		status int
		kind   string
	}{
		{"max devices", wsconn.Limits{MaxDevices: 3}, gate.Config{}, http.StatusServiceUnavailable, "full"},
		{"per address", wsconn.Limits{MaxDevices: 100}, gate.Config{PreHelloPerAddress: 3}, http.StatusTooManyRequests, "prehello_per_address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, srv := gateServer(t, tc.lim, tc.gate)
			var open []*websocket.Conn
			for range 3 {
				ws, _, err := websocket.Dial(ctx, wsURL(srv), nil)
				if err != nil {
					t.Fatal(err)
				}
				open = append(open, ws)
			}
			_, resp, err := websocket.Dial(ctx, wsURL(srv), nil)
			if err == nil || resp == nil || resp.StatusCode != tc.status {
				t.Fatalf("fourth connection without hello: %v, %v; want HTTP %d", resp, err, tc.status)
			}
			if got := metricInt(t, srv.URL, fmt.Sprintf("browserfl_rejections_total{kind=%q}", tc.kind)); got != 1 {
				t.Errorf("%s rejections = %d, want 1", tc.kind, got)
			}
			// Closing one makes room again.
			open[0].CloseNow()
			waitMetric(t, srv.URL, "browserfl_devices_connected", func(v int) bool { return v == 2 })
			ws, _, err := websocket.Dial(ctx, wsURL(srv), nil)
			if err != nil {
				t.Fatalf("after one closed: %v", err)
			}
			open[0] = ws
			for _, ws := range open {
				ws.CloseNow()
			}
		})
	}
}

// TestHelloTimeoutCounted: a connection that never says hello is closed
// after the hello timeout and counted.
func TestHelloTimeoutCounted(t *testing.T) {
	_, srv := gateServer(t, wsconn.Limits{HelloTimeout: 100 * time.Millisecond}, gate.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, wsURL(srv), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if _, _, err := ws.Read(ctx); err == nil {
		t.Fatal("read a frame without saying hello")
	}
	if got := waitMetric(t, srv.URL, `browserfl_rejections_total{kind="hello_timeout"}`, func(v int) bool { return v == 1 }); got != 1 {
		t.Errorf("hello_timeout = %d, want 1", got)
	}
}

// TestNeverReadingClientDropped: a client that says hello and then never
// reads does not answer pings and is dropped.
func TestNeverReadingClientDropped(t *testing.T) {
	_, srv := gateServer(t, wsconn.Limits{}, gate.Config{PingInterval: 50 * time.Millisecond, PingTimeout: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A reading client stays.
	m, reader := hello(ctx, t, srv, wire.Hello{Version: wire.Version, JoinCode: "join-me"})
	if _, ok := m.(wire.Welcome); !ok {
		t.Fatalf("got %#v", m)
	}
	defer reader.CloseNow()
	readErr := make(chan error, 1)
	go func() {
		_, _, err := reader.Read(ctx)
		readErr <- err
	}()
	// The silent one: hello written, nothing ever read.
	ws, _, err := websocket.Dial(ctx, wsURL(srv), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	b, _ := wire.EncodeControl(wire.Hello{Version: wire.Version, JoinCode: "join-me"})
	if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	if got := waitMetric(t, srv.URL, `browserfl_rejections_total{kind="ping_timeout"}`, func(v int) bool { return v >= 1 }); got != 1 {
		t.Fatalf("ping_timeout = %d, want 1", got)
	}
	if got := waitMetric(t, srv.URL, "browserfl_devices_connected", func(v int) bool { return v == 1 }); got != 1 {
		t.Errorf("%d connections open, want only the reading client", got)
	}
	if got := metricInt(t, srv.URL, "browserfl_slow_consumers_total"); got != 1 {
		t.Errorf("slow consumers = %d, want 1", got)
	}
	select {
	case err := <-readErr:
		t.Fatalf("the reading client was dropped: %v", err)
	default:
	}
}

// TestSecurityHeaders: the page and the dashboard forbid inline scripts
// and framing; every response has nosniff and no referrer; HSTS only
// under TLS.
func TestSecurityHeaders(t *testing.T) {
	c, srv := gateServer(t, wsconn.Limits{}, gate.Config{})
	tlsSrv := httptest.NewTLSServer(api.Handler(c, site.Assets{Index: []byte("<!doctype html>")}, nil))
	defer tlsSrv.Close()
	get := func(client *http.Client, url string) *http.Response {
		t.Helper()
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for _, path := range []string{"/", "/dashboard", "/dashboard.js", "/api/session?code=join-me", "/healthz", "/nothing"} {
		for _, tc := range []struct {
			client *http.Client
			base   string
			hsts   bool
		}{{http.DefaultClient, srv.URL, false}, {tlsSrv.Client(), tlsSrv.URL, true}} {
			resp := get(tc.client, tc.base+path)
			h := resp.Header
			if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Frame-Options") != "DENY" {
				t.Errorf("%s%s: headers %v", tc.base, path, h)
			}
			if !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
				t.Errorf("%s: CSP %q without frame-ancestors 'none'", path, h.Get("Content-Security-Policy"))
			}
			if hsts := h.Get("Strict-Transport-Security"); (hsts != "") != tc.hsts {
				t.Errorf("%s%s: HSTS %q", tc.base, path, hsts)
			}
		}
	}
	for _, path := range []string{"/", "/dashboard"} {
		csp := get(http.DefaultClient, srv.URL+path).Header.Get("Content-Security-Policy")
		script := ""
		for _, d := range strings.Split(csp, ";") {
			if d = strings.TrimSpace(d); strings.HasPrefix(d, "script-src ") {
				script = d
			}
		}
		if script == "" || strings.Contains(script, "unsafe-inline") {
			t.Errorf("%s: script-src %q", path, script)
		}
		if path == "/dashboard" && (strings.Contains(csp, "unsafe") || !strings.Contains(csp, "default-src 'self'")) {
			t.Errorf("dashboard CSP %q allows unsafe sources", csp)
		}
	}
	// The dashboard's markup has no inline script or style to forbid.
	resp, err := http.Get(srv.URL + "/dashboard")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if s := string(b); strings.Contains(s, "<script>") || strings.Contains(s, "<style") || strings.Contains(s, "style=") || strings.Contains(s, "onclick=") {
		t.Error("the dashboard markup has inline script or style")
	}
}

// TestMetricsToken: with a token, /metrics needs it (header or query)
// and counts refusals.
func TestMetricsToken(t *testing.T) {
	_, srv := gateServer(t, wsconn.Limits{}, gate.Config{MetricsToken: "s3cret"})
	status := func(path string, hdr string) int {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if hdr != "" {
			req.Header.Set("Authorization", hdr)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := status("/metrics", ""); s != http.StatusUnauthorized {
		t.Errorf("no token: %d", s)
	}
	if s := status("/metrics", "Bearer wrong"); s != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", s)
	}
	if s := status("/metrics", "Bearer s3cret"); s != http.StatusOK {
		t.Errorf("right token: %d", s)
	}
	resp, err := http.Get(srv.URL + "/metrics?token=s3cret")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `browserfl_rejections_total{kind="metrics_token"} 2`) {
		t.Errorf("metrics_token refusals not counted:\n%s", b)
	}
}

// TestTrustedProxyHTTP: over real HTTP, a client that is not a trusted
// proxy cannot escape the join-code backoff by faking X-Forwarded-For
// (a new address in every request), and behind a trusted proxy (here
// loopback) the backoff follows the client the proxy names, whatever the
// client wrote left of it.
func TestTrustedProxyHTTP(t *testing.T) {
	get := func(t *testing.T, srv *httptest.Server, code string, xff ...string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+"/api/session?code="+code, nil)
		for _, v := range xff {
			req.Header.Add("X-Forwarded-For", v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	gate := func(trusted string) gate.Config {
		ps, err := gate.ParseTrustedProxies(trusted)
		if err != nil {
			t.Fatal(err)
		}
		return gate.Config{JoinFreeFailures: 3, JoinBackoff: time.Minute, JoinBackoffMax: time.Minute, TrustedProxies: ps}
	}
	t.Run("untrusted peer", func(t *testing.T) {
		_, srv := gateServer(t, wsconn.Limits{}, gate("10.0.0.0/8"))
		codes := map[int]int{}
		for i := range 20 {
			codes[get(t, srv, "guess", fmt.Sprintf("203.0.113.%d", i))]++
		}
		if codes[http.StatusForbidden] != 4 || codes[http.StatusTooManyRequests] != 16 {
			t.Errorf("20 wrong codes with a new faked X-Forwarded-For each: %v, want 4 checked (403), 16 refused (429)", codes)
		}
		if s := get(t, srv, "join-me", "198.51.100.1"); s != http.StatusTooManyRequests {
			t.Errorf("right code with another faked address during the pause: %d, want 429", s)
		}
	})
	t.Run("trusted proxy", func(t *testing.T) {
		_, srv := gateServer(t, wsconn.Limits{}, gate("127.0.0.1/32,::1/128"))
		for i := range 4 {
			if s := get(t, srv, "guess", "203.0.113.1"); s != http.StatusForbidden {
				t.Fatalf("wrong code %d: %d, want 403", i, s)
			}
		}
		for i, xff := range [][]string{{"203.0.113.1"}, {fmt.Sprintf("198.51.100.%d, 203.0.113.1", 7)}, {"198.51.100.8", "203.0.113.1"}} {
			if s := get(t, srv, "join-me", xff...); s != http.StatusTooManyRequests {
				t.Errorf("case %d: the throttled client %q: %d, want 429", i, xff, s)
			}
		}
		if s := get(t, srv, "join-me", "203.0.113.2"); s != http.StatusOK {
			t.Errorf("another client behind the proxy: %d, want 200", s)
		}
	})
}

// TestJoinCodeAnyCase: the session's code "join-me" typed in another case,
// with spaces or without its dash, is the right code, over the websocket
// hello and over HTTP; a code that differs in a letter is still wrong;
// none of these count as failures.
func TestJoinCodeAnyCase(t *testing.T) {
	_, srv := gateServer(t, wsconn.Limits{}, gate.Config{JoinFreeFailures: 3, JoinBackoff: time.Second, JoinBackoffMax: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		code string
		ok   bool
	}{{"JOIN-ME", true}, {"Join Me", true}, {" joinme ", true}, {"JOIN-MF", false}} {
		m, ws := hello(ctx, t, srv, wire.Hello{Version: wire.Version, JoinCode: tc.code})
		if ws != nil {
			ws.CloseNow()
		}
		if _, welcome := m.(wire.Welcome); welcome != tc.ok {
			t.Errorf("hello with %q: %#v, want welcome %v", tc.code, m, tc.ok)
		}
		resp, err := http.Get(srv.URL + "/api/session?code=" + url.QueryEscape(tc.code))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if (resp.StatusCode == http.StatusOK) != tc.ok {
			t.Errorf("/api/session?code=%q: %d, want ok %v", tc.code, resp.StatusCode, tc.ok)
		}
	}
	if got := metricInt(t, srv.URL, rejJoinCode); got != 2 {
		t.Errorf("join_code rejections = %d, want 2 (the one wrong code, twice)", got)
	}
}

// TestClassBehindOneAddress: 40 students behind one school address join
// with the default gate; every fourth types the code wrong once first
// (10 typos in all), one types it wrong four times running. Each right
// code clears the address's record, so no student is held off, while
// guessing from that address still stops after 5 wrong codes in a row
// (TestJoinCodeGuessing, TestJoinBackoff).
func TestClassBehindOneAddress(t *testing.T) {
	_, srv := gateServer(t, wsconn.Limits{}, gate.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	try := func(code string) wire.Message {
		m, ws := hello(ctx, t, srv, wire.Hello{Version: wire.Version, JoinCode: code})
		if ws != nil {
			ws.CloseNow()
		}
		return m
	}
	welcomed := 0
	for i := range 40 {
		wrong := 0
		switch {
		case i == 17:
			wrong = 4
		case i%4 == 0:
			wrong = 1
		}
		for range wrong {
			if e, ok := try("join-mf").(wire.Error); !ok || e.Code != wire.CodeJoinCode {
				t.Fatalf("student %d: a typo was not answered as a wrong code: %#v", i, e)
			}
		}
		if _, ok := try("Join-Me").(wire.Welcome); !ok {
			t.Fatalf("student %d was held off after %d typos", i, wrong)
		}
		welcomed++
	}
	if welcomed != 40 {
		t.Fatalf("%d of 40 students joined", welcomed)
	}
	if got := metricInt(t, srv.URL, rejThrottled); got != 0 {
		t.Errorf("join_throttled rejections = %d, want 0", got)
	}
}

// TestFavicon: /favicon.ico is an SVG icon (no 404 in a browser's log),
// and both pages point to it.
func TestFavicon(t *testing.T) {
	_, srv := gateServer(t, wsconn.Limits{}, gate.Config{})
	resp, err := http.Get(srv.URL + "/favicon.ico")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("/favicon.ico: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if err := xml.Unmarshal(b, new(struct {
		XMLName xml.Name `xml:"svg"`
	})); err != nil {
		t.Fatalf("/favicon.ico is not an SVG document: %v", err)
	}
	dash, err := http.Get(srv.URL + "/dashboard")
	if err != nil {
		t.Fatal(err)
	}
	defer dash.Body.Close()
	if b, _ := io.ReadAll(dash.Body); !strings.Contains(string(b), `rel="icon" href="/favicon.ico"`) {
		t.Error("the dashboard does not point to the icon")
	}
}
