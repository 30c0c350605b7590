package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"browserfl/coordinator/view"
	"browserfl/device"
	"browserfl/shared/plan"
)

// TestDemoFiguresAgree: for the demo session, the page's figures
// (device.SessionFigures at the owner's delta), the coordinator's status
// JSON (what the dashboard prints), the planner's output and the docs
// state the same epsilon, to the last printed digit.
func TestDemoFiguresAgree(t *testing.T) {
	sess := defaults().Session
	page, err := device.SessionFigures(sess, plan.DefaultDelta)
	if err != nil {
		t.Fatal(err)
	}
	if !page.Private || page.Delta != plan.DefaultDelta {
		t.Fatalf("page figures %+v", page)
	}
	text, eps := page.Text(), page.EpsilonText()
	t.Logf("demo session: %s", text)

	// The dashboard reads the status JSON.
	b, err := json.Marshal(view.SessionPrivacy(sess))
	if err != nil {
		t.Fatal(err)
	}
	var status struct {
		Text        string  `json:"text"`
		EpsilonText string  `json:"epsilon_text"`
		DeltaText   string  `json:"delta_text"`
		Delta       float64 `json:"delta"`
	}
	if err := json.Unmarshal(b, &status); err != nil {
		t.Fatal(err)
	}
	if status.Text != text || status.EpsilonText != eps || status.DeltaText != page.DeltaText() || status.Delta != page.Delta {
		t.Errorf("status JSON %s disagrees with the page's %q", b, text)
	}

	// The planner, run as a user runs it.
	goBin, err := exec.LookPath("go") // go test puts GOROOT/bin first in PATH
	if err != nil {
		t.Fatal(err)
	}
	// The demo is the default lesson: its target is sized from the
	// owner's default budget (plan.DefaultLessonTarget), which
	// shared/lesson's TestDefaultLessonUsesBudget checks uses 95-100% of it.
	if eps, delta := plan.DefaultLessonTarget(); sess.RhoPaper != 0 || sess.Epsilon != eps || sess.Delta != delta {
		t.Errorf("demo target rho_p %v, (%v, %v), want plan.DefaultLessonTarget (%v, %v)", sess.RhoPaper, sess.Epsilon, sess.Delta, eps, delta)
	}
	cmd := exec.Command(goBin, "run", "browserfl/cmd/flplan", "-alg", sess.Algorithm,
		"-T", strconv.Itoa(sess.Rounds), "-M", strconv.Itoa(sess.M), "-m", strconv.Itoa(sess.Cohort),
		"-b", strconv.Itoa(sess.Batch), "-clip", strconv.FormatFloat(sess.Clip, 'g', -1, 64),
		"-epsilon", strconv.FormatFloat(sess.Epsilon, 'g', -1, 64), "-delta", strconv.FormatFloat(sess.Delta, 'g', -1, 64))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flplan: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "figures (page, dashboard, docs): "+text+"\n") ||
		!(strings.Contains(string(out), "epsilon = "+eps+"\n") || strings.Contains(string(out), "epsilon = "+eps+"  (zCDP")) {
		t.Errorf("flplan output does not state %q:\n%s", text, out)
	}

	// The docs state the demo's epsilon as the function prints it, and
	// none of the earlier disagreeing figures.
	for _, doc := range []string{"README.md", "docs/privacy.md", "docs/coordinator.md", "docs/browser.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if !strings.Contains(s, eps) {
			t.Errorf("%s does not state the demo's epsilon %s", doc, eps)
		}
		// 7.29 is the demo's figure under the former 1 + ln T calibration,
		// 7.59 the same ledger read with zCDP and CKS, 7.06 its figure at
		// rho_p = 1.5 before the target was sized from the owner's
		// budget (docs/privacy.md sections 2 and 2a quote them as
		// "before", never as the figure the session states).
		for _, stale := range []string{"ε = 7.29 at", "epsilon 7.29", "epsilon = 7.29\n", "7.28", "epsilon 7.3 ", "epsilon = 7.3 ", "ε = 7.3 ", "epsilon 7.3,",
			"ε = 7.59 at", "epsilon 7.59", "epsilon = 7.59\n", "ε = 7.06 at", "epsilon 7.06", "epsilon = 7.06\n"} {
			if strings.Contains(s, stale) {
				t.Errorf("%s still states %q", doc, stale)
			}
		}
	}
}
