package coordinator_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"browserfl/coordinator/api"
	"browserfl/coordinator/view"
	"browserfl/device"
)

// TestNoticesFollowTheLesson: the plan warnings are those of the
// session as it is: none in the lobby (the template's m = 10 against 3
// devices means nothing before Start sizes the lesson), none after Start
// sized it to the 3, the devices warning once one leaves. The status
// carries the lesson's start from Start on.
func TestNoticesFollowTheLesson(t *testing.T) {
	tmpl := testSession(8, 30, 10, 200, 10000)
	h := newLobby(t, tmpl, 100000)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- h.coord.Run(ctx) }()
	if n := api.Notices(h.coord, nil); len(n) != 0 {
		t.Errorf("empty lobby: notices %v", n)
	}
	var rts []*device.Runtime
	for i := range 3 {
		rt, _ := lobbyDevice(t, h.wsURL(), "join-me", i, tmpl.Dim, device.Policy{Unlimited: true})
		rts = append(rts, rt)
	}
	res := startDevices(ctx, rts)
	waitFor(t, "three devices in the lobby", func() bool { return lobbyCount(h.coord) == 3 })
	if n := api.Notices(h.coord, nil); len(n) != 0 {
		t.Errorf("a lobby of 3 (template m = 10): notices %v", n)
	}
	var st view.Status
	if code, body := getText(t, h.srv.URL+"/api/status?code=join-me"); code != 200 || json.Unmarshal([]byte(body), &st) != nil || !st.StartedAt.IsZero() || st.RunningSec != 0 {
		t.Errorf("lobby status %d: started %v, running %v s", code, st.StartedAt, st.RunningSec)
	}
	before := time.Now()
	if err := h.coord.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if n := api.Notices(h.coord, nil); len(n) != 0 {
		t.Errorf("after Start sized the lesson to 3: notices %v", n)
	}
	if code, body := getText(t, h.srv.URL+"/api/status?code=join-me"); code != 200 || json.Unmarshal([]byte(body), &st) != nil ||
		st.StartedAt.Before(before.Add(-time.Millisecond)) || len(st.Notices) != 0 || st.Title == "" {
		t.Errorf("status after Start %d: started %v (Start called at %v), notices %v, title %q", code, st.StartedAt, before, st.Notices, st.Title)
	}
	rts[2].Leave("stopped")
	waitFor(t, "the devices warning", func() bool {
		n := api.Notices(h.coord, nil)
		return len(n) == 1 && n[0].Kind == "devices"
	})
	cancel()
	<-res.done
	<-runErr
}
