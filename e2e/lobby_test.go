package e2e

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"browserfl/coordinator"
	"browserfl/coordinator/view"
	"browserfl/internal/loopback"
)

// TestBrowserLobby runs the teacher flow against the real coordinator
// (cmd/coordinator -lobby): a page joins with a nickname and waits in the
// lobby ("Waiting for your teacher to start…") while no round runs; the
// dashboard status lists the nickname and is read-only without the
// teacher secret; the teacher's Start (the secret from the data
// directory's index) sizes the session for the one page, which then
// trains; End finishes it early and the page says the session finished.
func TestBrowserLobby(t *testing.T) {
	webDir := pageBuild(t)
	bin := coordinatorBinary(t)
	const code = "LOBBY8"
	p := e2eSession(1)
	logf, err := os.CreateTemp("", "browserfl-e2e-lobby-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	dataDir := t.TempDir()
	coord := &process{t: t, bin: bin, addr: loopback.Addr(t), dataDir: dataDir, log: logf, args: []string{
		"-lobby", "-join-code", code, "-dataset", fashionDir, "-eval-every", "1", "-eval-samples", "500",
		"-demo-shards", "4", "-round-gap", "200ms",
		"-name", p.Name, "-algorithm", p.Algorithm, "-model", p.Model,
		"-M", fmt.Sprint(p.M), "-m", fmt.Sprint(p.Cohort), "-T", "6", "-b", fmt.Sprint(p.Batch),
		"-rho", fmt.Sprint(p.Rho), "-clip", fmt.Sprint(p.Clip), "-eta", fmt.Sprint(p.Eta), "-D", fmt.Sprint(p.Diameter),
	}}
	coord.start()
	defer coord.stop()
	secret := teacherSecretIn(t, dataDir)
	srv := serve(t, pageHandler(webDir, proxyTo(coord.addr)))
	status := func(extra string) view.Status {
		var st view.Status
		if err := getJSON(srv.URL+"/api/status?code="+code+extra, &st); err != nil {
			t.Fatalf("status: %v", err)
		}
		return st
	}

	b := launch(t, t.TempDir())
	defer b.close()
	b.must(60*time.Second, "consent screen",
		chromedp.Navigate(srv.URL+"/?code="+code),
		chromedp.WaitVisible("#consent", chromedp.ByID))
	// A nickname the page refuses, in plain words, before anything is
	// sent; then a good one.
	b.must(30*time.Second, "bad nickname",
		chromedp.SetValue("#budget", strconv.FormatFloat(budgetEpsilon, 'g', -1, 64), chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("budget").dispatchEvent(new Event("input", {bubbles: true}))`, nil),
		chromedp.SetValue("#nickname", "<b>Ada</b>", chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("nickname").dispatchEvent(new Event("input", {bubbles: true}))`, nil),
		chromedp.Click("#join-btn", chromedp.ByID),
		chromedp.Poll(`document.body.innerText.includes("letters, numbers, spaces")`, nil, chromedp.WithPollingTimeout(10*time.Second)))
	b.must(60*time.Second, "join with a nickname, load data, start helping",
		chromedp.SetValue("#nickname", "Ada L", chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("nickname").dispatchEvent(new Event("input", {bubbles: true}))`, nil),
		chromedp.Click("#join-btn", chromedp.ByID),
		chromedp.WaitVisible("#data", chromedp.ByID),
		chromedp.Click("#demo-btn", chromedp.ByID),
		chromedp.Poll(`Number((document.getElementById("data-count")||{}).textContent) > 0`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Click("#train-btn", chromedp.ByID),
		chromedp.WaitVisible("#lobby", chromedp.ByID),
		chromedp.Poll(`document.getElementById("lobby").innerText.includes("Waiting for your teacher to start") &&
			document.getElementById("lobby").innerText.includes("Ada L")`, nil, chromedp.WithPollingTimeout(20*time.Second)))

	st := status("")
	if st.State != coordinator.StateLobby || st.Teacher || st.Committed != 0 || len(st.People) != 1 ||
		st.People[0].Nickname != "Ada L" || st.People[0].State != "lobby" {
		t.Fatalf("lobby status: state %q, teacher %v, committed %d, people %+v", st.State, st.Teacher, st.Committed, st.People)
	}
	if !status("&teacher=" + secret).Teacher {
		t.Error("the status with the teacher secret does not say teacher")
	}
	teacher := func(action string, secret string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/teacher/"+action, nil)
		req.Header.Set("X-Teacher-Secret", secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := teacher("start", code); c != http.StatusForbidden {
		t.Fatalf("start with the join code as secret: %d, want 403", c)
	}
	if c := teacher("start", secret); c != http.StatusOK {
		t.Fatalf("start: %d", c)
	}
	b.must(120*time.Second, "training after Start",
		chromedp.WaitNotPresent("#lobby", chromedp.ByID),
		chromedp.Poll(`Number((document.getElementById("joined")||{}).textContent) >= 2`, nil, chromedp.WithPollingTimeout(110*time.Second)))
	st = status("")
	if st.State != coordinator.StateRunning || st.Session.M != 1 || st.Session.Cohort != 1 {
		t.Errorf("after Start: state %q, M %d, m %d", st.State, st.Session.M, st.Session.Cohort)
	}
	if c := teacher("end", secret); c != http.StatusOK {
		t.Fatalf("end: %d", c)
	}
	b.must(60*time.Second, "finished",
		chromedp.Poll(`document.body.innerText.includes("The session has finished")`, nil, chromedp.WithPollingTimeout(50*time.Second)))
	if st = status(""); st.State != coordinator.StateEnded || !strings.Contains(fmt.Sprint(st.People), "Ada L") {
		t.Errorf("after End: state %q, people %+v", st.State, st.People)
	}
}
