package e2e

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"browserfl/wasm/local"
)

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

// TestOwnerLedgerTwoTabsEngines is TestBrowserOwnerLedgerTwoTabs in
// the guide's other engines, Firefox ESR (over WebDriver BiDi) and
// WebKitGTK (MiniBrowser under WebKitWebDriver, in Xvfb), with Web
// Locks: both tabs must meet at the owner's lock and exactly one pass.
// One script (ownerRaceJS) drives both tabs from the first, the second
// opened with window.open (popups allowed for the test).
func TestOwnerLedgerTwoTabsEngines(t *testing.T) {
	open := map[string]func(t *testing.T) (tab, error){
		"firefox": func(t *testing.T) (tab, error) {
			return launchFirefox(t, []string{`user_pref("dom.disable_open_during_load", false);`}).newTab("")
		},
		"webkit": func(t *testing.T) (tab, error) {
			return newWebKitTab(t, startXvfb(t), []string{"--javascript-can-open-windows-automatically=true"})
		},
	}
	for _, name := range []string{"firefox", "webkit"} {
		t.Run(name, func(t *testing.T) {
			o := newOwnerSetup(t, false)
			p, err := open[name](t)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.navigate(o.srv.String() + "/?code=" + o.codes[0]); err != nil {
				t.Fatal(err)
			}
			args, _ := json.Marshal([]string{o.srv.String() + "/?code=" + o.codes[1],
				base64.StdEncoding.EncodeToString(o.im), base64.StdEncoding.EncodeToString(o.lab)})
			var v struct {
				AtLock   bool     `json:"atLock"`
				Outcomes []string `json:"outcomes"`
				Ledger   string   `json:"ledger"`
				UA       string   `json:"ua"`
				Error    string   `json:"error"`
			}
			// The script takes its arguments and a callback, as
			// WebDriver's execute/async hands them.
			if err := p.eval("new Promise(done => (function () {"+ownerRaceJS+"}).apply(null, ["+string(args[1:len(args)-1])+", done]))", &v); err != nil {
				t.Fatal(err)
			}
			if v.Error != "" {
				t.Fatalf("in %s: %s", name, v.Error)
			}
			t.Logf("%s: both tabs at the owner's lock: %v, outcomes %v", v.UA, v.AtLock, v.Outcomes)
			if !v.AtLock {
				t.Errorf("%s: the two tabs did not meet at the owner's Web Lock", name)
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
		})
	}
}
