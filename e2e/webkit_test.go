package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"browserfl/wasm/local"
)

// webDriver is a minimal W3C WebDriver client (WebKitGTK's
// WebKitWebDriver): a session, a navigation and scripts.
type webDriver struct {
	base, session string
}

func (d *webDriver) call(method, path string, in, out any) error {
	var body bytes.Buffer
	if in != nil {
		if err := json.NewEncoder(&body).Encode(in); err != nil {
			return err
		}
	}
	req, err := http.NewRequest(method, d.base+path, &body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 4 * time.Minute}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var v struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return fmt.Errorf("webdriver %s %s: %d: %w", method, path, resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("webdriver %s %s: %d: %.500s", method, path, resp.StatusCode, v.Value)
	}
	if out != nil {
		return json.Unmarshal(v.Value, out)
	}
	return nil
}

// TestWebKitOwnerLedgerTwoTabs is TestFirefoxOwnerLedgerTwoTabs in
// WebKitGTK (MiniBrowser under WebKitWebDriver, in Xvfb). It needs
// webkit2gtk-driver and xvfb and runs only with BFL_WEBKIT=1:
//
//	BFL_WEBKIT=1 go test ./e2e -run TestWebKitOwnerLedgerTwoTabs -count=1 -v
func TestWebKitOwnerLedgerTwoTabs(t *testing.T) {
	if os.Getenv("BFL_WEBKIT") != "1" {
		t.Skip("set BFL_WEBKIT=1 (needs webkit2gtk-driver and xvfb)")
	}
	o := newOwnerSetup(t, false)
	addr := freeAddr(t)
	port := addr[strings.LastIndex(addr, ":")+1:]
	cmd := exec.Command("xvfb-run", "-a", "WebKitWebDriver", "--port="+port)
	// Its own process group: xvfb-run's children (Xvfb, the driver, the
	// browser) end with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("WebKitWebDriver: %v (apt-get install webkit2gtk-driver xvfb)", err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	d := &webDriver{base: "http://" + addr}
	var sess struct {
		SessionID    string         `json:"sessionId"`
		Capabilities map[string]any `json:"capabilities"`
	}
	var err error
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		if err = d.call(http.MethodPost, "/session", map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
			"webkitgtk:browserOptions": map[string]any{"binary": "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser", "args": []string{"--automation", "--javascript-can-open-windows-automatically=true"}},
		}}}, &sess); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	d.session = "/session/" + sess.SessionID
	t.Cleanup(func() { d.call(http.MethodDelete, d.session, nil, nil) })
	if err := d.call(http.MethodPost, d.session+"/timeouts", map[string]any{"script": 180000}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.call(http.MethodPost, d.session+"/url", map[string]any{"url": o.srv.String() + "/?code=" + o.codes[0]}, nil); err != nil {
		t.Fatal(err)
	}
	var v struct {
		AtLock   bool     `json:"atLock"`
		Outcomes []string `json:"outcomes"`
		Ledger   string   `json:"ledger"`
		UA       string   `json:"ua"`
		Error    string   `json:"error"`
	}
	if err := d.call(http.MethodPost, d.session+"/execute/async", map[string]any{"script": ownerRaceJS,
		"args": []any{o.srv.String() + "/?code=" + o.codes[1], base64.StdEncoding.EncodeToString(o.im), base64.StdEncoding.EncodeToString(o.lab)},
	}, &v); err != nil {
		t.Fatal(err)
	}
	if v.Error != "" {
		t.Fatalf("in WebKitGTK: %s", v.Error)
	}
	t.Logf("%s: both tabs at the owner's lock: %v, outcomes %v", v.UA, v.AtLock, v.Outcomes)
	if !v.AtLock {
		t.Error("WebKitGTK: the two tabs did not meet at the owner's Web Lock")
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
