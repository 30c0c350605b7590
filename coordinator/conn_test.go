package coordinator_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"browserfl/coordinator"
	"browserfl/coordinator/store"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/wire"
)

// dialRaw opens a websocket without the device runtime and says hello.
func dialRaw(t *testing.T, ctx context.Context, url string, hello bool) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(1 << 20)
	if hello {
		b, _ := wire.EncodeControl(wire.Hello{Version: wire.Version, JoinCode: "join-me"})
		if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := wire.DecodeControl(b); err != nil {
			t.Fatal(err)
		} else if _, ok := m.(wire.Welcome); !ok {
			t.Fatalf("got %T, want welcome", m)
		}
	}
	return ws
}

// readClose reads until the connection closes and returns the error code
// of the last error message and the websocket close status.
func readClose(ctx context.Context, ws *websocket.Conn) (code string, status websocket.StatusCode) {
	for {
		typ, b, err := ws.Read(ctx)
		if err != nil {
			return code, websocket.CloseStatus(err)
		}
		if typ == websocket.MessageText {
			if m, err := wire.DecodeControl(b); err == nil {
				if e, ok := m.(wire.Error); ok {
					code = e.Code
				}
			}
		}
	}
}

func metric(t *testing.T, base, name string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, name+" ") {
			return strings.TrimPrefix(line, name+" ")
		}
	}
	t.Fatalf("metric %s not found", name)
	return ""
}

func TestBadInputClosesConnection(t *testing.T) {
	sess := testSession(4, 4, 2, 3, 500)
	h := newHarness(t, sess, 5) // no round starts: the model must stay untouched
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	upd, _ := wire.EncodeUpdate(wire.UpdateFrame{T: 1, Payload: []byte{1, 2, 3}})
	status, _ := wire.EncodeControl(wire.Hello{Version: wire.Version, JoinCode: "join-me"})
	tests := []struct {
		name   string
		hello  bool
		typ    websocket.MessageType
		frame  []byte
		code   string
		status websocket.StatusCode
	}{
		{"garbage binary", true, websocket.MessageBinary, []byte("not a frame"), wire.CodeBadFrame, websocket.StatusPolicyViolation},
		{"unassigned update", true, websocket.MessageBinary, upd, wire.CodeProtocol, websocket.StatusPolicyViolation},
		{"unknown control", true, websocket.MessageText, []byte(`{"type":"gimme","body":{}}`), wire.CodeBadFrame, websocket.StatusPolicyViolation},
		{"second hello", true, websocket.MessageText, status, wire.CodeProtocol, websocket.StatusPolicyViolation},
		{"binary before hello", false, websocket.MessageBinary, upd, wire.CodeBadFrame, websocket.StatusPolicyViolation},
		{"oversized frame", true, websocket.MessageBinary, make([]byte, 16*sess.Dim+2048), "", websocket.StatusMessageTooBig},
		{"wrong version", false, websocket.MessageText, []byte(`{"type":"hello","body":{"v":9,"join_code":"join-me"}}`), wire.CodeVersion, websocket.StatusPolicyViolation},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := metric(t, h.srv.URL, "browserfl_bad_frames_total")
			ws := dialRaw(t, ctx, h.wsURL(), tc.hello)
			defer ws.CloseNow()
			ws.Write(ctx, tc.typ, tc.frame)
			code, st := readClose(ctx, ws)
			if code != tc.code || st != tc.status {
				t.Errorf("closed with code %q status %v, want %q %v", code, st, tc.code, tc.status)
			}
			if tc.code == wire.CodeBadFrame || tc.code == wire.CodeVersion || tc.status == websocket.StatusMessageTooBig {
				// Undecodable, oversized and wrong-version frames are
				// all bad frames (docs/protocol.md). The library closes
				// an oversized frame's connection itself, so the count
				// may follow the close: poll.
				want, _ := strconv.Atoi(before)
				if got := waitMetric(t, h.srv.URL, "browserfl_bad_frames_total", func(v int) bool { return v > want }); got <= want {
					t.Errorf("bad frame not counted (still %d)", got)
				}
			}
		})
	}
	if h.coord.Committed() != 0 || h.server.T != 1 {
		t.Fatalf("bad input touched the session: committed %d, server at round %d", h.coord.Committed(), h.server.T)
	}
	for _, q := range h.server.Q {
		if q != 0 {
			t.Fatal("bad input touched the model")
		}
	}
}

func TestRateLimit(t *testing.T) {
	h := newHarnessLimits(t, testSession(4, 4, 2, 3, 500), 5, wsconn.Limits{MsgRate: 1, MsgBurst: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ws := dialRaw(t, ctx, h.wsURL(), true)
	defer ws.CloseNow()
	st, _ := wire.EncodeControl(wire.Status{T: 1})
	// The bucket holds 4 messages and refills at 1/s: 10 back-to-back
	// messages exceed it unless writing them takes more than 5 s. (Not
	// more messages: a client that keeps writing into a closed socket gets
	// a reset and loses the close reason.)
	for range 10 {
		if err := ws.Write(ctx, websocket.MessageText, st); err != nil {
			break
		}
	}
	if code, st := readClose(ctx, ws); code != wire.CodeRate {
		t.Fatalf("closed with %q (status %v), want %q", code, st, wire.CodeRate)
	}
}

func TestOriginAllowlist(t *testing.T) {
	h := newHarness(t, testSession(4, 4, 2, 3, 500), 5)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, h.wsURL(), &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": []string{"https://evil.example"}}})
	if err == nil {
		t.Fatal("a foreign Origin was allowed to open the websocket")
	}
	if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign origin: response %v, want 403", resp)
	}
	// The page's own origin is allowed.
	ws, _, err := websocket.Dial(ctx, h.wsURL(), &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": []string{h.srv.URL}}})
	if err != nil {
		t.Fatalf("same origin refused: %v", err)
	}
	ws.CloseNow()
}

func TestHTTPEndpoints(t *testing.T) {
	h := newHarness(t, testSession(4, 4, 2, 3, 500), 5)
	tests := []struct {
		path       string
		wantStatus int
		wantBody   string
	}{
		{"/healthz", 200, "ok"},
		{"/metrics", 200, "browserfl_devices_connected"},
		{"/api/status", 403, "wrong join code"},
		{"/api/status?code=join-me", 200, `"committed":0`},
		{"/api/rounds?code=join-me", 200, "[]"},
		{"/dashboard", 200, "<canvas"},
		{"/api/session", 403, "wrong join code"},
		{"/api/session?code=wrong", 403, "wrong join code"},
		{"/api/session?code=join-me", 200, `"algorithm":"nc"`},
		{"/api/progress?code=join-me", 200, `"rounds":3`},
		{"/api/model?code=join-me", 404, "no committed round"},
	}
	for _, tc := range tests {
		resp, err := http.Get(h.srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.wantStatus || !bytes.Contains(b, []byte(tc.wantBody)) {
			t.Errorf("GET %s = %d %.80q, want %d containing %q", tc.path, resp.StatusCode, b, tc.wantStatus, tc.wantBody)
		}
	}
}

func TestStore(t *testing.T) {
	h := newHarness(t, testSession(4, 4, 2, 3, 500), 5)
	st := h.store
	if err := st.CommitRound(coordinator.CoordinatorRecord(2), []byte("s")); err == nil {
		t.Error("committed round 2 before round 1")
	}
	if err := st.CommitRound(coordinator.CoordinatorRecord(1, "a"), []byte("s1")); err != nil {
		t.Fatal(err)
	}
	if err := st.CommitRound(coordinator.CoordinatorRecord(1, "b"), []byte("s1b")); err == nil {
		t.Error("committed round 1 twice")
	}
	rec, ok, err := st.Round(1)
	if err != nil || !ok || !rec.Includes("a") || rec.Includes("b") {
		t.Errorf("Round(1) = %+v, %v, %v", rec, ok, err)
	}
	n, state, err := st.State()
	if err != nil || n != 1 || string(state) != "s1" {
		t.Errorf("State() = %d, %q, %v", n, state, err)
	}
	if err := st.AddDevice("dev", "secret"); err != nil {
		t.Fatal(err)
	}
	if err := st.Authenticate("dev", "secret"); err != nil {
		t.Errorf("right secret refused: %v", err)
	}
	if err := st.Authenticate("dev", "secreT"); !errors.Is(err, store.ErrBadSecret) {
		t.Errorf("wrong secret: %v", err)
	}
}

// A client may send its hello in the same packet as the upgrade request,
// before the 101 arrives: the bytes the HTTP server has read past the
// request must reach the websocket reader (the coordinator hands the
// websocket library its own small buffers at the hijack).
func TestHelloPipelinedWithUpgrade(t *testing.T) {
	sess := testSession(200, 4, 2, 3, 500) // frames up to 16 d + 1 KiB
	h := newHarness(t, sess, 5)
	hello, _ := wire.EncodeControl(wire.Hello{Version: wire.Version, JoinCode: "join-me"})
	for _, pad := range []int{0, 2000} { // a hello larger than the coordinator's websocket buffer too
		t.Run(strconv.Itoa(pad), func(t *testing.T) {
			msg := hello
			if pad > 0 {
				msg = append([]byte("{"+strings.Repeat(" ", pad)), hello[1:]...)
			}
			conn, err := net.Dial("tcp", strings.TrimPrefix(h.srv.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			req := "GET /ws HTTP/1.1\r\nHost: " + strings.TrimPrefix(h.srv.URL, "http://") + "\r\n" +
				"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
				"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
			// One masked text frame (RFC 6455 section 5.2), mask 0.
			frame := []byte{0x81}
			switch n := len(msg); {
			case n < 126:
				frame = append(frame, 0x80|byte(n))
			default:
				frame = append(frame, 0x80|126, byte(n>>8), byte(n))
			}
			frame = append(frame, 0, 0, 0, 0)
			frame = append(frame, msg...)
			if _, err := conn.Write(append([]byte(req), frame...)); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("HTTP %d", resp.StatusCode)
			}
			hdr := make([]byte, 2)
			if _, err := io.ReadFull(br, hdr); err != nil {
				t.Fatal(err)
			}
			n := int(hdr[1] & 0x7f)
			if n == 126 {
				ext := make([]byte, 2)
				io.ReadFull(br, ext)
				n = int(ext[0])<<8 | int(ext[1])
			}
			body := make([]byte, n)
			if _, err := io.ReadFull(br, body); err != nil {
				t.Fatal(err)
			}
			m, err := wire.DecodeControl(body)
			if err != nil {
				t.Fatalf("first frame %q: %v", body, err)
			}
			if _, ok := m.(wire.Welcome); !ok {
				t.Fatalf("got %T (%s), want a welcome", m, body)
			}
		})
	}
}
