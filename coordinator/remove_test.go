package coordinator_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"browserfl/coordinator"
	"browserfl/coordinator/api"
	"browserfl/coordinator/internal/nctest"
	"browserfl/coordinator/site"
	"browserfl/coordinator/view"
	"browserfl/device"
	"browserfl/shared/wire"

	"github.com/coder/websocket"
)

// helloAs opens a websocket, says hello (as a new device when id is
// empty) and returns the connection and the welcome.
func helloAs(t *testing.T, ctx context.Context, url, id, secret, nickname string) (*websocket.Conn, wire.Message) {
	t.Helper()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(1 << 20)
	b, _ := wire.EncodeControl(wire.Hello{Version: wire.Version, JoinCode: "join-me", DeviceID: id, Secret: secret, Nickname: nickname})
	if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	_, b, err = ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, err := wire.DecodeControl(b)
	if err != nil {
		t.Fatal(err)
	}
	return ws, m
}

// teacherStatus reads /api/status of the session of code with the
// teacher secret.
func teacherStatus(t *testing.T, base, code, secret string) view.Status {
	t.Helper()
	var st view.Status
	if err := getJSON(base+"/api/status?code="+url.QueryEscape(code)+"&teacher="+url.QueryEscape(secret), &st); err != nil || !st.Teacher {
		t.Fatalf("the teacher's status: teacher %v (%v)", st.Teacher, err)
	}
	return st
}

func person(st view.Status, nickname string) (view.Person, bool) {
	for _, p := range st.People {
		if p.Nickname == nickname {
			return p, true
		}
	}
	return view.Person{}, false
}

// TestTeacherSeesRejectionsAndRemoves: a device that sends updates far
// above the norm bound is listed, in the teacher's view only, with the
// count of its rejected updates and the reason in plain words; the
// teacher removes it (the teacher secret is required), its connection is
// closed with "removed", its id is refused on hello for the rest of the
// session and after a restart, and the others finish the session with
// the noise-cancellation invariant intact. In both shapes: devices on
// the session process itself, and devices on an edge (the edge rejects
// the update and tells the session why; the session closes the removed
// device's connection and refuses its hello through the edge).
func TestTeacherSeesRejectionsAndRemoves(t *testing.T) {
	for _, shape := range []string{"one process", "edge"} {
		t.Run(shape, func(t *testing.T) { teacherSeesRejectionsAndRemoves(t, shape == "edge") })
	}
}

func teacherSeesRejectionsAndRemoves(t *testing.T, atEdge bool) {
	sess := testSession(8, 4, 4, 6, 20000)
	h := newHarnessWith(t, sess, func(cfg *coordinator.Config) {
		cfg.MinDevices, cfg.TeacherSecret = 3, teacherSecret
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wsURL, metricsURL := h.wsURL(), h.srv.URL
	if atEdge {
		var hs *httptest.Server
		hs, wsURL = oneEdge(t, ctx, h)
		metricsURL = hs.URL
	}
	runErr := make(chan error, 1)
	go func() { runErr <- h.coord.Run(ctx) }()

	attacker, m := helloAs(t, ctx, wsURL, "", "", "Mallory")
	welcome, ok := m.(wire.Welcome)
	if !ok {
		t.Fatalf("got %T, want a welcome", m)
	}
	done := attack(ctx, attacker, sess.Dim, hostilePayload(sess.Dim))
	var rts []*device.Runtime
	var fakes []*nctest.Device
	// Device 0 holds round 2 back until Mallory is removed, so the
	// session cannot end first.
	release := make(chan struct{})
	for i := range 3 {
		fake := nctest.NewDevice(target(i, sess.Dim), 1, 0.3, uint64(1000+i))
		cfg := deviceConfig(t, wsURL, i, fake)
		if i == 0 {
			cfg.Hooks = &device.Hooks{BeforeSend: func(t int) (time.Duration, bool) {
				if t == 2 {
					<-release
				}
				return 0, false
			}}
		}
		rt, err := device.New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		rts, fakes = append(rts, rt), append(fakes, fake)
	}
	devicesDone := make(chan struct{})
	go func() { defer close(devicesDone); runDevices(t, ctx, rts) }()

	base := h.srv.URL
	// Round 1 rejected Mallory's update; round 2 waits for device 0.
	waitFor(t, "round 2", func() bool {
		r := h.coord.Status().Round
		return r != nil && r.T == 2
	})
	mallory, _ := person(teacherStatus(t, base, "join-me", teacherSecret), "Mallory")
	if mallory.Rejected == 0 {
		t.Errorf("teacher's view after a rejected update: %+v", mallory)
	}
	if mallory.Device != welcome.DeviceID {
		t.Errorf("teacher's view: device %q, want Mallory's id %q", mallory.Device, welcome.DeviceID)
	}
	if !strings.Contains(mallory.Rejection, "bigger than the session allows") || strings.Contains(mallory.Rejection, "norm") {
		t.Errorf("rejection in words: %q", mallory.Rejection)
	}
	// The projector's read-only view shows neither ids nor rejections.
	if _, body := getText(t, base+"/api/status?code=join-me"); strings.Contains(body, welcome.DeviceID) ||
		strings.Contains(body, `"rejected":`) || strings.Contains(body, `"device":`) {
		t.Errorf("read-only status shows what only the teacher sees: %.300s", body)
	}

	removeURL := base + "/api/teacher/remove?device=" + url.QueryEscape(welcome.DeviceID)
	for _, tc := range []struct {
		name string
		url  string
		hdr  map[string]string
		want int
	}{
		{"no secret", removeURL, nil, http.StatusForbidden},
		{"join code only", removeURL, map[string]string{"X-Join-Code": "join-me"}, http.StatusForbidden},
		{"wrong secret", removeURL, map[string]string{api.TeacherHeader: "wrong"}, http.StatusForbidden},
		{"unknown device", base + "/api/teacher/remove?device=0123", map[string]string{api.TeacherHeader: teacherSecret}, http.StatusNotFound},
		{"no device", base + "/api/teacher/remove", map[string]string{api.TeacherHeader: teacherSecret}, http.StatusNotFound},
	} {
		if code, body := post(t, tc.url, tc.hdr); code != tc.want {
			t.Errorf("%s: %d %q, want %d", tc.name, code, body, tc.want)
		}
	}
	if p, _ := person(teacherStatus(t, base, "join-me", teacherSecret), "Mallory"); p.State == "removed" {
		t.Fatal("a refused call removed the device")
	}
	if code, body := post(t, removeURL, map[string]string{api.TeacherHeader: teacherSecret}); code != http.StatusOK {
		t.Fatalf("remove: %d %q", code, body)
	}
	if code, _ := post(t, removeURL, map[string]string{api.TeacherHeader: teacherSecret}); code != http.StatusConflict {
		t.Errorf("removing twice: %d, want 409", code)
	}
	res := <-done
	if res.closeCode != wire.CodeRemoved {
		t.Errorf("the removed device's connection closed with %q (%v), want %q", res.closeCode, res.err, wire.CodeRemoved)
	}
	if p, _ := person(teacherStatus(t, base, "join-me", teacherSecret), "Mallory"); p.State != "removed" {
		t.Errorf("Mallory is %q, want removed", p.State)
	}
	// Its id and secret are refused for the rest of the session.
	ws, m := helloAs(t, ctx, wsURL, welcome.DeviceID, welcome.Secret, "Mallory")
	if e, ok := m.(wire.Error); !ok || e.Code != wire.CodeRemoved {
		t.Errorf("hello of the removed id: %#v, want error %q", m, wire.CodeRemoved)
	}
	ws.CloseNow()

	close(release)
	<-devicesDone
	if err := <-runErr; err != nil {
		t.Fatalf("coordinator: %v", err)
	}
	if got := h.coord.Committed(); got != sess.Rounds {
		t.Fatalf("committed %d rounds, want %d", got, sess.Rounds)
	}
	checkInvariant(t, h.qs, sess.Cohort, fakes)
	if _, metrics := getText(t, metricsURL+"/metrics"); !strings.Contains(metrics, `browserfl_rejections_total{kind="removed"} 1`) {
		t.Errorf("the refused hello is not counted")
	}

	// A restart keeps refusing it: the removal is in the store.
	c2, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Store: h.store,
		Server: nctest.NewServer(sess.Dim, sess.Cohort, 0.5), Seed: 42, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv2 := httptest.NewServer(api.Handler(c2, site.Assets{}, nil))
	defer srv2.Close()
	ws, m = helloAs(t, ctx, "ws"+strings.TrimPrefix(srv2.URL, "http")+"/ws", welcome.DeviceID, welcome.Secret, "")
	if e, ok := m.(wire.Error); !ok || e.Code != wire.CodeRemoved {
		t.Errorf("after a restart, hello of the removed id: %#v, want error %q", m, wire.CodeRemoved)
	}
	ws.CloseNow()
}

// TestRemoveMidRoundExcludesHeldUpdate removes a device whose update the
// open round already holds while the round still waits for another
// member: the update is taken out whole (the device is told "excluded"
// and aborts it), the round commits without it, the device's page learns
// why (device.ErrRemoved), and the noise-cancellation invariant holds
// over every device, the removed one included. Half-including it (the
// update summed, the device told "excluded") breaks the invariant.
func TestRemoveMidRoundExcludesHeldUpdate(t *testing.T) {
	sess := testSession(8, 3, 3, 4, 60000)
	h := newHarnessWith(t, sess, func(cfg *coordinator.Config) {
		cfg.MinDevices, cfg.TeacherSecret = 2, teacherSecret
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- h.coord.Run(ctx) }()

	release := make(chan struct{})
	var rts []*device.Runtime
	var fakes []*nctest.Device
	logs := make([]*eventLog, 3)
	for i := range 3 {
		fake := nctest.NewDevice(target(i, sess.Dim), 1, 0.3, uint64(1000+i))
		cfg := deviceConfig(t, h.wsURL(), i, fake)
		cfg.Nickname = []string{"Ada", "Grace", "Alan"}[i]
		logs[i] = &eventLog{}
		inner, log := cfg.OnEvent, logs[i]
		cfg.OnEvent = func(e device.Event) { log.add(e); inner(e) }
		if i == 2 {
			// Alan holds round 1 back until Ada is removed.
			cfg.Hooks = &device.Hooks{BeforeSend: func(t int) (time.Duration, bool) {
				if t == 1 {
					<-release
				}
				return 0, false
			}}
		}
		rt, err := device.New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		rts, fakes = append(rts, rt), append(fakes, fake)
	}
	res := startDevices(ctx, rts)
	waitFor(t, "round 1 holding Ada's and Grace's updates", func() bool {
		r := h.coord.Status().Round
		return r != nil && r.T == 1 && r.Received == 2
	})
	ada, _ := person(teacherStatus(t, h.srv.URL, "join-me", teacherSecret), "Ada")
	if code, body := post(t, h.srv.URL+"/api/teacher/remove?device="+url.QueryEscape(ada.Device),
		map[string]string{api.TeacherHeader: teacherSecret}); code != http.StatusOK {
		t.Fatalf("remove: %d %q", code, body)
	}
	close(release)
	<-res.done
	if err := <-runErr; err != nil {
		t.Fatalf("coordinator: %v", err)
	}
	if !errors.Is(res.errs[0], device.ErrRemoved) || !errors.Is(res.errs[0], device.ErrRefused) {
		t.Errorf("the removed device stopped with %v, want ErrRemoved", res.errs[0])
	}
	for i, err := range res.errs[1:] {
		if err != nil {
			t.Errorf("device %d: %v", i+1, err)
		}
	}
	if inc, exc := logs[0].n(device.EventIncluded), logs[0].n(device.EventExcluded); inc != 0 || exc != 1 {
		t.Errorf("removed device: %d included, %d excluded; want 0 and 1", inc, exc)
	}
	rec, ok, err := h.store.Round(1)
	if err != nil || !ok {
		t.Fatalf("round 1: %v %v", ok, err)
	}
	if rec.Includes(ada.Device) || len(rec.Included) != 2 {
		t.Errorf("round 1 included %d devices (Ada: %v), want Grace and Alan only", len(rec.Included), rec.Includes(ada.Device))
	}
	if got := h.coord.Committed(); got != sess.Rounds {
		t.Fatalf("committed %d rounds, want %d", got, sess.Rounds)
	}
	checkInvariant(t, h.qs, sess.Cohort, fakes)
}

// TestRemoveInLobby: a device removed in the lobby stops (ErrRemoved),
// is listed as removed, and is not counted when Start sizes the session.
func TestRemoveInLobby(t *testing.T) {
	tmpl := testSession(8, 30, 10, 200, 10000)
	h := newLobby(t, tmpl, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- h.coord.Run(ctx) }()
	var rts []*device.Runtime
	for i := range 2 {
		rt, _ := lobbyDevice(t, h.wsURL(), "join-me", i, tmpl.Dim, device.Policy{Unlimited: true})
		rts = append(rts, rt)
	}
	res := startDevices(ctx, rts)
	waitFor(t, "two devices in the lobby", func() bool { return lobbyCount(h.coord) == 2 })
	ada, _ := person(teacherStatus(t, h.srv.URL, "join-me", teacherSecret), "Ada")
	if code, body := post(t, h.srv.URL+"/api/teacher/remove?device="+url.QueryEscape(ada.Device),
		map[string]string{api.TeacherHeader: teacherSecret}); code != http.StatusOK {
		t.Fatalf("remove: %d %q", code, body)
	}
	if p, _ := person(h.coord.Status(), "Ada"); p.State != "removed" {
		t.Errorf("Ada is %q, want removed", p.State)
	}
	if code, body := post(t, h.srv.URL+"/api/teacher/start", map[string]string{api.TeacherHeader: teacherSecret}); code != http.StatusOK {
		t.Fatalf("start: %d %q", code, body)
	}
	if m := h.coord.Session().M; m != 1 {
		t.Errorf("Start sized the session for %d devices, want 1 (the removed one not counted)", m)
	}
	<-res.done
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res.errs[0], device.ErrRemoved) {
		t.Errorf("the removed device stopped with %v, want ErrRemoved", res.errs[0])
	}
	if res.errs[1] != nil {
		t.Errorf("the other device: %v", res.errs[1])
	}
}
