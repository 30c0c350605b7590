package coordinator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"rsc.io/qr"

	"browserfl/coordinator"
	"browserfl/coordinator/api"
	"browserfl/coordinator/internal/nctest"
	"browserfl/coordinator/site"
	"browserfl/coordinator/store"
	"browserfl/coordinator/view"
	"browserfl/shared/wire"
)

// joinFixture is a coordinator whose store already holds committed
// rounds (model X after the last), served over loopback.
type joinFixture struct {
	dir  string
	sess wire.SessionParams
	x    []float64
}

func newJoinFixture(t *testing.T) *joinFixture {
	t.Helper()
	f := &joinFixture{dir: t.TempDir(),
		sess: wire.SessionParams{Name: "quiz", Dim: 2 * (3 + 1), DeadlineMillis: 1000, Algorithm: "nc", Model: "logreg",
			Features: 3, Classes: 2, M: 4, Cohort: 2, Rounds: 10, Batch: 1, Clip: 1, Eta: 1, Rho: 1, Labels: "cat,dog"}}
	st, err := store.Open(filepath.Join(f.dir, "coord.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := nctest.NewServer(f.sess.Dim, f.sess.Cohort, 0.5)
	// Device a is included in rounds 1, 2 and 4; b in 1 and 3; c is
	// asked in round 4 and never included.
	incl := [][]string{{"a", "b"}, {"a"}, {"b"}, {"a"}}
	for i, in := range incl {
		for k := range srv.X {
			srv.X[k] = 0.25*float64(k) - float64(i)
		}
		state, err := srv.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		rec := coordinator.CoordinatorRecord(i+1, in...)
		if i == 3 {
			rec.Cohort = []string{"a", "c"}
		}
		if err := st.CommitRound(rec, state); err != nil {
			t.Fatal(err)
		}
	}
	// Evaluations are added after the commit: round 2 is the best,
	// round 4 the last.
	for _, ev := range []struct {
		t, samples int
		acc        float64
	}{{2, 1000, 0.6}, {4, 500, 0.55}} {
		rec := coordinator.CoordinatorRecord(ev.t, incl[ev.t-1]...)
		rec.Evaluated, rec.Accuracy, rec.Loss, rec.EvalSamples = true, ev.acc, 1, ev.samples
		if err := st.UpdateRecord(rec); err != nil {
			t.Fatal(err)
		}
	}
	f.x = append([]float64(nil), srv.X...)
	return f
}

// start opens the store and a coordinator on it, served with join URLs.
func (f *joinFixture) start(t *testing.T, join site.JoinInfo) (*httptest.Server, func()) {
	t.Helper()
	st, err := store.Open(filepath.Join(f.dir, "coord.db"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := coordinator.New(coordinator.Config{Session: f.sess, JoinCode: "join-me", Server: nctest.NewServer(f.sess.Dim, f.sess.Cohort, 0.5),
		Store: st, MinDevices: 1000, Seed: 1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler(c, site.Assets{Join: join}, nil))
	return srv, func() { srv.Close(); c.Shutdown(); st.Close() }
}

func get(t *testing.T, url, code string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if code != "" {
		req.Header.Set("X-Join-Code", code)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

type statusJoin struct {
	Privacy struct {
		MaxParticipations int    `json:"max_participations"`
		EpsilonText       string `json:"epsilon_text"`
	} `json:"privacy"`
	UptimeSec float64        `json:"uptime_s"`
	LastEval  *view.EvalView `json:"last_eval"`
	Join      struct {
		URLs    []string     `json:"urls"`
		Summary view.Summary `json:"summary"`
	} `json:"join"`
}

func status(t *testing.T, base string) statusJoin {
	t.Helper()
	resp, b := get(t, base+"/api/status", "join-me")
	if resp.StatusCode != 200 {
		t.Fatalf("status: %d %s", resp.StatusCode, b)
	}
	var s statusJoin
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStoreFiguresSurviveRestart: the most rounds one device was included
// in, the participants and the session start come from the store, so a
// new coordinator on the reopened store reports the same.
func TestStoreFiguresSurviveRestart(t *testing.T) {
	f := newJoinFixture(t)
	srv, stop := f.start(t, site.JoinInfo{})
	s1 := status(t, srv.URL)
	// Asked again, the incremental count re-reads the last rounds for
	// their evaluations and must not count their devices twice.
	if again := status(t, srv.URL); again.Join.Summary.MostIncluded != s1.Join.Summary.MostIncluded ||
		again.Join.Summary.MostAsked != s1.Join.Summary.MostAsked {
		t.Errorf("second status: most included %d, asked %d; first %d, %d", again.Join.Summary.MostIncluded,
			again.Join.Summary.MostAsked, s1.Join.Summary.MostIncluded, s1.Join.Summary.MostAsked)
	}
	stop()
	srv, stop = f.start(t, site.JoinInfo{})
	defer stop()
	s2 := status(t, srv.URL)
	for i, s := range []statusJoin{s1, s2} {
		sum := s.Join.Summary
		if sum.MostIncluded != 3 || s.Privacy.MaxParticipations != 3 || sum.MostAsked != 3 || sum.Participants != 2 {
			t.Errorf("coordinator %d: most included %d (privacy %d), most asked %d, participants %d; want 3, 3, 3, 2",
				i+1, sum.MostIncluded, s.Privacy.MaxParticipations, sum.MostAsked, sum.Participants)
		}
		if sum.BestAccuracy == nil || *sum.BestAccuracy != 0.6 || sum.BestRound != 2 ||
			sum.FinalAccuracy == nil || *sum.FinalAccuracy != 0.55 || sum.FinalRound != 4 {
			t.Errorf("coordinator %d: best %v at %d, final %v at %d; want 0.6 at 2, 0.55 at 4", i+1, sum.BestAccuracy, sum.BestRound, sum.FinalAccuracy, sum.FinalRound)
		}
		// The number of test samples goes with every accuracy.
		if sum.AccuracySamples != 500 || s.LastEval == nil || s.LastEval.T != 4 || s.LastEval.Samples != 500 {
			t.Errorf("coordinator %d: final accuracy on %d samples, last evaluation %+v; want 500 samples at round 4", i+1, sum.AccuracySamples, s.LastEval)
		}
		if sum.WorstEpsilonText == "" || sum.WorstEpsilonText != s.Privacy.EpsilonText {
			t.Errorf("coordinator %d: worst epsilon %q, the plan's %q", i+1, sum.WorstEpsilonText, s.Privacy.EpsilonText)
		}
		// Page's own address when no join URLs were configured.
		if len(s.Join.URLs) != 1 || !strings.HasPrefix(s.Join.URLs[0], "http://127.0.0.1:") || !strings.HasSuffix(s.Join.URLs[0], "/?code=join-me") {
			t.Errorf("coordinator %d: join URLs %q", i+1, s.Join.URLs)
		}
	}
	if !s1.Join.Summary.SessionStart.Equal(s2.Join.Summary.SessionStart) || s1.Join.Summary.SessionStart.IsZero() {
		t.Errorf("session start %v then %v: want the same, kept in the store", s1.Join.Summary.SessionStart, s2.Join.Summary.SessionStart)
	}
	if s2.UptimeSec < s1.UptimeSec {
		t.Errorf("uptime went back from %v to %v across the restart", s1.UptimeSec, s2.UptimeSec)
	}
}

// TestPeopleRoundsSurviveRestart: the projector's per-person count of
// rounds is the session's, read from the store, not this process's: a
// device included in rounds 1, 2 and 4 before the coordinator restarted
// is shown with 3 once it says hello to the new one.
func TestPeopleRoundsSurviveRestart(t *testing.T) {
	f := newJoinFixture(t)
	st, err := store.Open(filepath.Join(f.dir, "coord.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AddDevice("a", "secret-of-a"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	srv, stop := f.start(t, site.JoinInfo{})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, ws := hello(ctx, t, srv, wire.Hello{Version: wire.Version, JoinCode: "join-me", DeviceID: "a", Secret: "secret-of-a", Nickname: "Ada"})
	if _, ok := m.(wire.Welcome); !ok || ws == nil {
		t.Fatalf("hello of a: %#v", m)
	}
	defer ws.CloseNow()
	_, b := get(t, srv.URL+"/api/status", "join-me")
	var s struct {
		People []struct {
			Nickname string `json:"nickname"`
			Rounds   int    `json:"rounds"`
		} `json:"people"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.People) != 1 || s.People[0].Nickname != "Ada" || s.People[0].Rounds != 3 {
		t.Errorf("people %+v, want Ada with the 3 rounds the store holds", s.People)
	}
}

// TestModelJSON: /api/model.json needs the join code; its document
// decodes, matches the session's dimensions and carries the committed
// model (as the wire's float32).
func TestModelJSON(t *testing.T) {
	f := newJoinFixture(t)
	srv, stop := f.start(t, site.JoinInfo{})
	defer stop()
	for _, code := range []string{"", "wrong"} {
		if resp, _ := get(t, srv.URL+"/api/model.json", code); resp.StatusCode != http.StatusForbidden {
			t.Errorf("code %q: status %d, want 403", code, resp.StatusCode)
		}
	}
	resp, b := get(t, srv.URL+"/api/model.json", "join-me")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var m site.ModelJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	if err := site.ValidateModelJSON(m); err != nil {
		t.Fatal(err)
	}
	if m.Round != 4 || m.Session != f.sess || !reflect.DeepEqual(m.Labels, []string{"cat", "dog"}) {
		t.Errorf("round %d, session %+v, labels %q", m.Round, m.Session, m.Labels)
	}
	if m.Accuracy == nil || *m.Accuracy != 0.55 || m.AccuracyRound != 4 || m.AccuracySamples != 500 {
		t.Errorf("accuracy %v at round %d on %d samples; want 0.55 at 4 on 500", m.Accuracy, m.AccuracyRound, m.AccuracySamples)
	}
	for k, v := range m.Weights {
		if v != float64(float32(f.x[k])) {
			t.Fatalf("weight %d = %v, want %v", k, v, f.x[k])
		}
	}
	// Round trip: encoding the decoded document again gives the same.
	again, _ := json.Marshal(m)
	var m2 site.ModelJSON
	if err := json.Unmarshal(again, &m2); err != nil || !reflect.DeepEqual(m, m2) {
		t.Errorf("round trip differs: %v", err)
	}
	// The validator catches what it is there for.
	bad := m
	bad.Weights = append([]float64(nil), m.Weights...)
	bad.Weights[3] = math.NaN()
	if site.ValidateModelJSON(bad) == nil {
		t.Error("a NaN weight passed")
	}
	bad.Weights = m.Weights[:5]
	if site.ValidateModelJSON(bad) == nil {
		t.Error("a short weight vector passed")
	}
}

// TestJoinQR: the QR endpoint needs the code and returns a PNG whose
// modules are those of the join URL's code (and, where zbarimg is
// installed, which decodes to the URL).
func TestJoinQR(t *testing.T) {
	f := newJoinFixture(t)
	url := "http://192.168.1.23:8080/?code=join-me"
	srv, stop := f.start(t, site.JoinInfo{URLs: []string{url, "http://[2001:db8::42]:8080/?code=join-me"}})
	defer stop()
	if resp, _ := get(t, srv.URL+"/api/join-qr.png", "nope"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("wrong code: status %d", resp.StatusCode)
	}
	if resp, _ := get(t, srv.URL+"/api/join-qr.png?i=2", "join-me"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("no such address: status %d", resp.StatusCode)
	}
	resp, b := get(t, srv.URL+"/api/join-qr.png", "join-me")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	code, err := qr.Encode(url, qr.M)
	if err != nil {
		t.Fatal(err)
	}
	const scale, quiet = 8, 4
	if got, want := img.Bounds().Dx(), (code.Size+2*quiet)*scale; got != want || img.Bounds().Dy() != want {
		t.Fatalf("image %v, want %d px square", img.Bounds(), want)
	}
	dark := func(x, y int) bool { g := color.GrayModel.Convert(img.At(x, y)).(color.Gray); return g.Y < 128 }
	for y := -quiet; y < code.Size+quiet; y++ {
		for x := -quiet; x < code.Size+quiet; x++ {
			cx, cy := (x+quiet)*scale+scale/2, (y+quiet)*scale+scale/2
			if dark(cx, cy) != code.Black(x, y) {
				t.Fatalf("module (%d, %d) differs from the URL's code", x, y)
			}
		}
	}
	// The terminal rendering holds the same modules (light drawn).
	term, err := site.TerminalQR(url)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkTerminalQR(term, code); err != nil {
		t.Error(err)
	}
	zbar, err := exec.LookPath("zbarimg")
	if err != nil {
		t.Log("zbarimg not installed: the PNG's modules were checked, not decoded")
		return
	}
	file := filepath.Join(t.TempDir(), "join.png")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(zbar, "--raw", "-q", file).Output()
	if err != nil {
		t.Fatalf("zbarimg: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != url {
		t.Errorf("the QR code decodes to %q, want %q", got, url)
	}
	// And the terminal's, drawn as an image (dark where no light block).
	if got := decodeTerminal(t, zbar, term); got != url {
		t.Errorf("the terminal QR code decodes to %q, want %q", got, url)
	}
}

// terminalModules reads TerminalQR's text back into light/dark modules.
func terminalModules(term string) [][]bool {
	var rows [][]bool
	for _, line := range strings.Split(strings.TrimRight(term, "\n"), "\n") {
		line = strings.TrimPrefix(line, "  ")
		var top, bot []bool
		for _, r := range line {
			top = append(top, r == '█' || r == '▀')
			bot = append(bot, r == '█' || r == '▄')
		}
		rows = append(rows, top, bot)
	}
	return rows // light modules: true
}

func checkTerminalQR(term string, code *qr.Code) error {
	rows := terminalModules(term)
	const quiet = 2
	for y := 0; y < code.Size; y++ {
		for x := 0; x < code.Size; x++ {
			if rows[y+quiet][x+quiet] == code.Black(x, y) {
				return fmt.Errorf("terminal module (%d, %d) differs", x, y)
			}
		}
	}
	return nil
}

func decodeTerminal(t *testing.T, zbar, term string) string {
	rows := terminalModules(term)
	const scale = 6
	img := image.NewGray(image.Rect(0, 0, len(rows[0])*scale, len(rows)*scale))
	for y, row := range rows {
		for x, light := range row {
			v := uint8(0)
			if light {
				v = 255
			}
			for i := 0; i < scale*scale; i++ {
				img.SetGray(x*scale+i%scale, y*scale+i/scale, color.Gray{Y: v})
			}
		}
	}
	file := filepath.Join(t.TempDir(), "term.png")
	var buf bytes.Buffer
	png.Encode(&buf, img)
	os.WriteFile(file, buf.Bytes(), 0o600)
	out, err := exec.Command(zbar, "--raw", "-q", file).Output()
	if err != nil {
		t.Fatalf("zbarimg on the terminal code: %v", err)
	}
	return strings.TrimSpace(string(out))
}
