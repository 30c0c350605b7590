package e2e

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"browserfl/coordinator/api"
	"browserfl/coordinator/view"
	"browserfl/shared/mechanism"
	"browserfl/shared/optim/algo"
	"browserfl/shared/wire"
)

// TestBrowserLocal runs one page in a session of "local" (private local
// training: K = 2 hidden noisy steps per round on b/K = 32 samples each)
// of the real coordinator (-algorithm local, rho_p = 2 as e2eSession):
// the page must answer every round with a finite update, the
// coordinator must include them all (none rejected), and the global
// model must learn (Fashion-MNIST, 5 rounds of 64 samples: the page's
// local files, test samples 9000 on; the coordinator evaluates on the
// first 1,000 test samples, where its untrained model scores 0.107).
// The statistic is the best of the last three evaluations: the accuracy
// after one round swings (a CI run went 0.413, 0.352, 0.175 over rounds
// 3-5, failing the earlier check of the last one against 0.18), while a
// page that trained nothing stays near 0.107 in all three. Measured in
// the browser against the real coordinator (16 runs of this subtest,
// 2026-11-29, quiet machine): best of rounds 3-5 0.409 on average, sd
// 0.055, lowest 0.298 (the last round alone: 0.366, sd 0.079, lowest
// 0.277; earlier, 20 runs: 0.383, sd 0.052). The threshold 0.20 is 3.8
// sd below the mean (false failure about 1e-4 if Gaussian; the sd is
// from 16 runs). (Against the scripted coordinator it ran 3 rounds:
// 0.374 on average, sd 0.045, over 40 runs; against the real one 3
// rounds gave 0.314, sd 0.059, lowest 0.216, over 19 runs: too close to
// a useful threshold, hence 5 rounds.)
func TestBrowserLocal(t *testing.T) {
	t.Run("K=2", func(t *testing.T) { browserLocal(t, 5, nil, 0.20) })
	// E = 4 passes over K = 2 step batches by output perturbation
	// (logreg-unit, nothing clipped, eta 2, no projection), 6 rounds: the
	// page computes, charges and sends it like any other algorithm.
	// Measured in the browser against the real coordinator (20 runs of
	// this subtest, 2026-11-29, same machine and load): accuracy after 6
	// rounds 0.338 on average, sd 0.037, lowest 0.262 (against the
	// scripted coordinator, 40 runs, 2026-11-27: 0.359, sd 0.049). The
	// threshold 0.15 is 5.1 sd below that mean (false failure below 1e-6
	// if Gaussian), and the best of the last three evaluations is never
	// below the last one; a page that trained nothing stays near 0.107.
	t.Run("passes", func(t *testing.T) {
		browserLocal(t, 6, []string{"-model", "logreg-unit", "-clip", "2", "-eta", "2", "-D", "0", "-local-epochs", "4"}, 0.15)
	})
}

// browserLocal runs the local session of rounds rounds (e2eSession's
// b = 64, clip 1, eta 1, D = 10, rho_p = 2, then the flags extra) and
// checks the page's updates, the coordinator's inclusions and the best of
// its last three accuracies against threshold.
func browserLocal(t *testing.T, rounds int, extra []string, threshold float64) {
	webDir := pageBuild(t)
	all := fashionTest(t)
	const code = "LOCAL8"
	args := append([]string{"-algorithm", "local", "-local-steps", "2", "-T", strconv.Itoa(rounds), "-b", "64",
		"-clip", "1", "-eta", "1", "-D", "10", "-rho", "2", "-eval-every", "1", "-eval-samples", "1000"}, extra...)
	o := startOnePage(t, webDir, code, args...)
	p := o.status().Session
	if p.Algorithm != "local" || p.LocalSteps != 2 || p.Rounds != rounds || p.Batch != 64 {
		t.Fatalf("the coordinator's session %+v, want local, K = 2, T = %d, b = 64", p, rounds)
	}
	if p.LocalEpochs > 1 {
		if !algo.LocalOutputPerturbation(p) {
			t.Fatal("not under output perturbation")
		}
	}
	mine := all
	mine.Samples = all.Samples[9000 : 9000+p.Rounds*p.Batch]
	b := launch(t, t.TempDir())
	defer b.close()
	openPageFiles(t, b, o.url+"/?code="+code, idxFiles(t, mine), len(mine.Samples))
	st := o.waitStatus("the session's end", 4*time.Minute, func(st view.Status) bool { return st.Finished })

	// Every update the page sent: one per round, finite and not zero.
	// DevTools reports a sent frame a little after the page sent it:
	// wait (generously) until it has reported as many as rounds.
	for end := time.Now().Add(60 * time.Second); sentUpdates(b) < p.Rounds && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
	}
	var ts []int
	for _, f := range b.sent() {
		if f.Opcode == 1 {
			continue
		}
		u, err := wire.DecodeUpdate(f.Data, wire.Limits{MaxBytes: 8 << 20})
		if err != nil {
			t.Fatalf("the page sent a frame that is no update: %v", err)
		}
		vec := make([]float64, p.Dim)
		if err := mechanism.Decode(vec, u.Payload); err != nil {
			t.Fatalf("round %d: payload: %v", u.T, err)
		}
		if err := mechanism.CheckFinite(vec); err != nil || mechanism.Norm(vec) == 0 {
			t.Errorf("round %d: update of norm %v (%v)", u.T, mechanism.Norm(vec), err)
		}
		ts = append(ts, u.T)
	}
	if len(ts) != p.Rounds {
		t.Fatalf("%d updates sent (rounds %v), want one per round (%d)", len(ts), ts, p.Rounds)
	}
	// The coordinator included them all.
	if len(st.People) != 1 || st.People[0].Rounds != p.Rounds || st.People[0].Rejected != 0 {
		t.Errorf("the coordinator's people at the end: %+v, want one, included in all %d rounds, none rejected", st.People, p.Rounds)
	}
	var pr api.Progress
	if err := getJSON(o.url+"/api/progress?code="+code, &pr); err != nil {
		t.Fatal(err)
	}
	acc := pr.Accuracy
	best := math.NaN()
	if n := len(acc); n >= 3 && acc[n-1].Round == p.Rounds {
		best = max(acc[n-3].Accuracy, acc[n-2].Accuracy, acc[n-1].Accuracy)
	}
	if !(best > threshold) {
		t.Errorf("accuracy by round %+v: best of the last three %v, want > %v (evaluated after every round to round %d)", acc, best, threshold, p.Rounds)
	}
	t.Logf("accuracy by round: %+v", acc)

	// Once the session has ended the page asks for its progress once
	// more and then stops (it asked every second before: 3 or 4 in the
	// window below; 1 is allowed for a last fetch slower than a second).
	b.must(time.Minute, "page finished",
		chromedp.Poll(`(document.getElementById("conn")||{}).textContent === "finished"`, nil,
			chromedp.WithPollingTimeout(55*time.Second)))
	time.Sleep(time.Second)
	n0 := o.asked("/api/progress")
	time.Sleep(3 * time.Second)
	if n := o.asked("/api/progress") - n0; n > 1 {
		t.Errorf("the page asked for the session's progress %d times in the 3 s after it had ended, want at most 1", n)
	}
}
