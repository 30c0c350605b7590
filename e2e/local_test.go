package e2e

import (
	"context"
	"math"
	"testing"
	"time"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/shared/wire"
)

// TestBrowserLocal runs one page in a session of "local" (private local
// training: K = 2 hidden noisy steps per round on b/K = 32 samples each)
// against the scripted coordinator, which runs the real server half: the
// page must answer every round with a finite update, the server must
// accept them all, and the global model must learn (Fashion-MNIST, 3
// rounds of 64 samples). Measured in the browser (40 runs of this test,
// 2026-11-24): accuracy after 3 rounds 0.374 on average, sd 0.045, lowest
// 0.28 (a run in make test read 0.237: the earlier native estimate, sd
// 0.03 over seeds 0-59, understated the spread). The threshold 0.2, twice
// chance, is 3.9 sd below the mean (false failure about 5e-5 if Gaussian),
// while a page that trained nothing stays near 0.1.
func TestBrowserLocal(t *testing.T) {
	t.Run("K=2", func(t *testing.T) { browserLocal(t, nil, 0.2) })
	// E = 4 passes over K = 2 step batches under the last-iterate charge
	// (logreg-unit, nothing clipped, eta 2, no projection), 6 rounds: the
	// page computes, charges and sends it like any other algorithm.
	// Measured in the browser (40 runs of this subtest, 2026-11-27):
	// accuracy after 6 rounds 0.359 on average, sd 0.049, lowest 0.23. The
	// threshold 0.15 is 4.3 sd below the mean (false failure about 1e-5 if
	// Gaussian), while a page that trained nothing stays near 0.1.
	t.Run("passes", func(t *testing.T) {
		browserLocal(t, func(p *wire.SessionParams) {
			p.Model, p.Clip, p.Eta, p.Diameter, p.LocalEpochs, p.Rounds = "logreg-unit", 2, 2, 0, 4, 6
			if _, li, err := optim.LocalCharge(plan.FromSession(*p)); err != nil || !li {
				t.Fatalf("not under the last-iterate charge: %v %v", li, err)
			}
		}, 0.15)
	})
}

func browserLocal(t *testing.T, mod func(*wire.SessionParams), threshold float64) {
	webDir := pageBuild(t)
	all := fashionTest(t)
	p := e2eSession(1)
	p.Algorithm, p.LocalSteps, p.Rounds = "local", 2, 3
	if mod != nil {
		mod(&p)
	}
	shard, err := all.Take(p.Rounds * p.Batch)
	if err != nil {
		t.Fatal(err)
	}
	const code = "LOCAL8"
	sc := newScripted(t, p, code, []dataset.Set{shard}, all.Samples[9000:], lies{})
	srv := serve(t, pageHandler(webDir, sc.handler()))
	b := launch(t, t.TempDir())
	defer b.close()
	openPage(t, b, srv.URL+"/?code="+code, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := sc.run(ctx); err != nil {
		t.Fatal(err)
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if len(sc.sent) != p.Rounds {
		t.Fatalf("%d updates received, want one per round (%d)", len(sc.sent), p.Rounds)
	}
	for _, u := range sc.sent {
		if err := mechanism.CheckFinite(u.Vec); err != nil || mechanism.Norm(u.Vec) == 0 {
			t.Errorf("round %d: update of norm %v (%v)", u.T, mechanism.Norm(u.Vec), err)
		}
	}
	if n := len(sc.acc); n == 0 || !(sc.acc[n-1].Accuracy > threshold) || math.IsNaN(sc.acc[n-1].Accuracy) {
		t.Errorf("accuracy after %d rounds: %+v, want > %v", p.Rounds, sc.acc, threshold)
	}
	t.Logf("accuracy by round: %+v", sc.acc)
}
