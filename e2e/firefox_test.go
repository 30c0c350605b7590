package e2e

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"browserfl/wasm/local"
)

// marionette is a minimal client of Firefox's built-in remote protocol
// (Marionette: length-prefixed JSON, "len:[0, id, command, params]"),
// enough to open a page and run scripts in it without geckodriver (which
// Debian does not package).
type marionette struct {
	conn net.Conn
	r    *bufio.Reader
	id   int
}

func (m *marionette) read() (json.RawMessage, error) {
	n, err := m.r.ReadString(':')
	if err != nil {
		return nil, err
	}
	size, err := strconv.Atoi(strings.TrimSuffix(n, ":"))
	if err != nil {
		return nil, fmt.Errorf("marionette: bad length %q", n)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(m.r, b); err != nil {
		return nil, err
	}
	return b, nil
}

func (m *marionette) call(cmd string, params any, out any) error {
	m.id++
	b, err := json.Marshal([]any{0, m.id, cmd, params})
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(m.conn, "%d:%s", len(b), b); err != nil {
		return err
	}
	raw, err := m.read()
	if err != nil {
		return err
	}
	var resp []json.RawMessage
	if err := json.Unmarshal(raw, &resp); err != nil || len(resp) != 4 {
		return fmt.Errorf("marionette: bad response %.200s", raw)
	}
	if string(resp[2]) != "null" {
		return fmt.Errorf("marionette: %s: %.500s", cmd, resp[2])
	}
	if out != nil {
		return json.Unmarshal(resp[3], out)
	}
	return nil
}

// startFirefox runs firefox-esr headless with Marionette on a free port
// and a fresh profile that allows a script to open a second tab.
func startFirefox(t *testing.T) *marionette {
	t.Helper()
	bin, err := exec.LookPath("firefox-esr")
	if err != nil {
		t.Fatalf("firefox-esr: %v (apt-get install firefox-esr)", err)
	}
	port := strings.Split(freeAddr(t), ":")[1]
	profile := t.TempDir()
	prefs := `user_pref("marionette.port", ` + port + `);
user_pref("dom.disable_open_during_load", false);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
`
	if err := os.WriteFile(filepath.Join(profile, "user.js"), []byte(prefs), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--marionette", "--no-remote", "--profile", profile)
	cmd.Env = append(os.Environ(), "MOZ_CRASHREPORTER_DISABLE=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var conn net.Conn
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if conn, err = net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			break
		}
	}
	if conn == nil {
		t.Fatalf("marionette: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	m := &marionette{conn: conn, r: bufio.NewReader(conn)}
	if _, err := m.read(); err != nil { // the greeting
		t.Fatal(err)
	}
	if err := m.call("WebDriver:NewSession", map[string]any{"capabilities": map[string]any{}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.call("WebDriver:SetTimeouts", map[string]any{"script": 180000, "pageLoad": 60000}, nil); err != nil {
		t.Fatal(err)
	}
	return m
}

// ownerRaceJS drives both tabs from the first one (the second opened with
// window.open): consent, the owner's files (set through a DataTransfer),
// a hold on the owner's ledger, both "Start helping" in one task, the
// lock state, the release, each tab's outcome and the ledger afterwards.
const ownerRaceJS = `
const [url1, imB64, labB64, done] = arguments;
(async () => {
  const until = async (f, what) => { for (let i = 0; i < 1200; i++) { const v = f(); if (v) return v; await new Promise(r => setTimeout(r, 100)); } throw new Error("timed out: " + what); };
  const bytes = b64 => Uint8Array.from(atob(b64), c => c.charCodeAt(0));
  const prepare = async (w) => {
    const el = id => w.document && w.document.getElementById(id);
    await until(() => el("consent") && el("join-btn"), "consent");
    el("join-btn").click();
    await until(() => el("files"), "data screen");
    const dt = new w.DataTransfer();
    dt.items.add(new w.File([bytes(imB64)], "mine-images-idx3-ubyte"));
    dt.items.add(new w.File([bytes(labB64)], "mine-labels-idx1-ubyte"));
    el("files").files = dt.files;
    el("files").dispatchEvent(new w.Event("change", {bubbles: true}));
    await until(() => Number((el("data-count") || {}).textContent) > 0, "files stored");
  };
  await prepare(window);
  const tab1 = window.open(url1);
  await prepare(tab1);
  const db = await new Promise((ok, fail) => {
    const req = indexedDB.open("browserfl-owner", 1);
    req.onupgradeneeded = () => { if (!req.result.objectStoreNames.contains("kv")) req.result.createObjectStore("kv"); };
    req.onsuccess = () => ok(req.result); req.onerror = () => fail(req.error);
  });
  let release = false;
  const st = db.transaction("kv", "readwrite").objectStore("kv");
  const hold = () => { if (!release) st.get("ledger").onsuccess = hold; };
  hold();
  document.getElementById("train-btn").click();
  tab1.document.getElementById("train-btn").click();
  let atLock = false;
  for (let i = 0; i < 50 && !atLock; i++) {
    const q = await navigator.locks.query();
    atLock = q.held.filter(l => l.name === "browserfl-owner-ledger").length === 1 &&
      q.pending.filter(l => l.name === "browserfl-owner-ledger").length === 1;
    if (!atLock) await new Promise(r => setTimeout(r, 100));
  }
  release = true;
  const refused = "This page will not train on your data in this session";
  const outcome = d => d.body.innerText.includes(refused) ? "refused" : /Connection\s+connected/.test(d.body.innerText) ? "training" : "";
  const outcomes = [await until(() => outcome(document), "tab 0"), await until(() => outcome(tab1.document), "tab 1")];
  const ledger = await new Promise((ok, fail) => {
    const g = db.transaction("kv", "readonly").objectStore("kv").get("ledger");
    g.onsuccess = () => ok(g.result ? new TextDecoder().decode(g.result) : ""); g.onerror = () => fail(g.error);
  });
  return {atLock, outcomes, ledger, ua: navigator.userAgent};
})().then(done, e => done({error: String(e) + " at " + (e && e.stack)}));
`

// TestFirefoxOwnerLedgerTwoTabs is TestBrowserOwnerLedgerTwoTabs in
// Firefox ESR (the guide's second engine), with Web Locks: both tabs must
// meet at the owner's lock and exactly one pass. It needs firefox-esr
// and runs only with BFL_FIREFOX=1 (make test does not install Firefox):
//
//	BFL_FIREFOX=1 go test ./e2e -run TestFirefoxOwnerLedgerTwoTabs -count=1 -v
func TestFirefoxOwnerLedgerTwoTabs(t *testing.T) {
	if os.Getenv("BFL_FIREFOX") != "1" {
		t.Skip("set BFL_FIREFOX=1 (needs firefox-esr)")
	}
	o := newOwnerSetup(t, false)
	m := startFirefox(t)
	if err := m.call("WebDriver:Navigate", map[string]any{"url": o.srv.String() + "/?code=" + o.codes[0]}, nil); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Value struct {
			AtLock   bool     `json:"atLock"`
			Outcomes []string `json:"outcomes"`
			Ledger   string   `json:"ledger"`
			UA       string   `json:"ua"`
			Error    string   `json:"error"`
		} `json:"value"`
	}
	if err := m.call("WebDriver:ExecuteAsyncScript", map[string]any{"script": ownerRaceJS,
		"args": []any{o.srv.String() + "/?code=" + o.codes[1], base64.StdEncoding.EncodeToString(o.im), base64.StdEncoding.EncodeToString(o.lab)},
	}, &res); err != nil {
		t.Fatal(err)
	}
	v := res.Value
	if v.Error != "" {
		t.Fatalf("in Firefox: %s", v.Error)
	}
	t.Logf("%s: both tabs at the owner's lock: %v, outcomes %v", v.UA, v.AtLock, v.Outcomes)
	if !v.AtLock {
		t.Error("Firefox: the two tabs did not meet at the owner's Web Lock")
	}
	l, err := local.ParseOwnerLedger([]byte(v.Ledger))
	if err != nil {
		t.Fatal(err)
	}
	passed := make([]bool, len(v.Outcomes))
	for i, out := range v.Outcomes {
		passed[i] = out == "training"
	}
	checkOwnerLedger(t, o.codes, passed, l)
}
