package plan

import (
	"crypto/rand"
	"math"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/privacy"
)

// TestProgressShareFollowsLedger runs a real device of the demo lesson's
// privacy shape (nc, 200 rounds, cohort 10 of 30, the default lesson's
// target) through every round, as the worst-case device that is asked
// each time, and reads its ledger after each release the way the page's
// meter does (Budget.Progress). The meter's fill (Share) must be the
// ledger's rho over the lesson's worst case, and the plan's share after
// as many releases (Planned) the same: the device is on plan, and the
// fill reaches 1 at the last round. An under-reported fill (any factor
// below 1, or a fill read in epsilon) fails by far more than the 1e-9
// allowed. Deterministic: no statistical error.
func TestProgressShareFollowsLedger(t *testing.T) {
	p := demo()
	p.Features, p.Classes = 2, 2
	f, err := SessionFigures(p, DefaultDelta)
	if err != nil {
		t.Fatal(err)
	}
	if f.WorstReleases != p.Rounds {
		t.Fatalf("worst releases %d, want %d", f.WorstReleases, p.Rounds)
	}
	m, err := model.New(p.Model, p.Features, p.Classes)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := optim.NewServer(p, make([]float64, m.Dim()), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dv, err := optim.NewDevice(p, m.Clone(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	batch := make([]dataset.Sample, p.Batch)
	for i := range batch {
		batch[i] = dataset.Sample{X: []float32{float32(i%3) - 1, 0.5}, Label: i % 2}
	}
	b := DefaultBudget()
	var at17 Progress
	for r := 1; r <= p.Rounds; r++ {
		rd := srv.Next()
		u, err := dv.Prepare(rd, batch)
		if err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		if err := srv.Apply(rd.T, []optim.Update{u}); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		if err := dv.Commit(rd.T); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		l := dv.(optim.Accountant).Ledger()
		pr, err := b.Progress(p, privacy.Spent{}, l.Spent(), r)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(pr.Share*f.WorstRho-l.Rho()) > 1e-9*f.WorstRho {
			t.Fatalf("round %d: share %v of worst rho %v, the ledger holds %v", r, pr.Share, f.WorstRho, l.Rho())
		}
		if math.Abs(pr.Planned-pr.Share) > 1e-9 || !pr.OnPlan || pr.Releases != r || !pr.Decreasing {
			t.Fatalf("round %d: %+v, want the plan's share after %d releases to be the ledger's", r, pr, r)
		}
		if r == 17 {
			at17 = pr
		}
	}
	// A ledger holding more than the plan spends in as many releases
	// (here 18 releases' worth after 17) is off the plan.
	over, err := b.Progress(p, privacy.Spent{}, privacy.Charged(f.WorstSchedule[17]), 17)
	if err != nil || over.OnPlan || !(over.Share > over.Planned) {
		t.Errorf("18 releases' rho after 17 releases: %+v (%v), want off the plan", over, err)
	}
	last := dv.(optim.Accountant).Ledger()
	if pr, _ := b.Progress(p, privacy.Spent{}, last.Spent(), p.Rounds); math.Abs(pr.Share-1) > 1e-9 {
		t.Errorf("after the last round: share %v, want 1", pr.Share)
	}
	// Noise cancellation's first releases cost the most: after 17 of
	// 200 the ledger holds more than half the lesson's rho, and epsilon
	// (concave in rho) reads higher still.
	if !(at17.Share > 0.5 && at17.Share < at17.Spent/at17.Most) {
		t.Errorf("round 17 of 200: share %v, epsilon %v of %v", at17.Share, at17.Spent, at17.Most)
	}
	t.Logf("round 17 of 200: share %.3f, epsilon %.2f of at most %.2f (%.0f%%)", at17.Share, at17.Spent, at17.Most, 100*at17.Spent/at17.Most)
}

// A trusted session's fill is the published rounds' share of its worst
// case (Figures.Published): every round costs the same, so n/T.
func TestProgressShareTrusted(t *testing.T) {
	p := demo()
	p.Algorithm = "trusted"
	f, err := SessionFigures(p, DefaultDelta)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 17, f.WorstReleases} {
		s, err := f.Published(n)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := DefaultBudget().Progress(p, privacy.Spent{}, s, n)
		if err != nil {
			t.Fatal(err)
		}
		if want := float64(n) / float64(f.WorstReleases); math.Abs(pr.Share-want) > 1e-9 || math.Abs(pr.Planned-want) > 1e-9 || pr.Decreasing {
			t.Errorf("%d rounds published: %+v, want share %v", n, pr, want)
		}
	}
}
