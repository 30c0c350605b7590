package plan

import (
	"math"
	"testing"

	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
	"browserfl/shared/privacy"
)

func base(alg string) optim.Params {
	return optim.Params{Algorithm: alg, M: 30, Cohort: 10, Rounds: 200, Batch: 16, Clip: 1, Eta: 0.1, Rho: 2, LocalSize: 512}
}

func TestComputeWorstCase(t *testing.T) {
	const delta = 1e-5
	budget := privacy.ZCDPFromPaperRho(2) // rho_p^2/2 = 2
	tests := []struct {
		alg   string
		worst float64 // expected WorstRho, derived in the comment
	}{
		// nc: release n costs rho_p^2/(2 H_T n); T releases cost
		// rho_p^2/2, the whole budget.
		{"nc", budget},
		// trusted: T rounds, each (2S/(bm))^2/(2 sigma^2) = rho_p^2/(2T).
		{"trusted", budget},
		// fresh noise: PlannedReleases = ceil(T m/M) = 67 releases of budget/67 each.
		{"noisysgd", budget},
		{"soteria-sgd", budget},
	}
	for _, tc := range tests {
		r, err := Compute(base(tc.alg), delta)
		if err != nil {
			t.Fatalf("%s: %v", tc.alg, err)
		}
		if math.Abs(r.WorstRho-tc.worst) > 1e-9*tc.worst {
			t.Errorf("%s: worst rho %v, want %v", tc.alg, r.WorstRho, tc.worst)
		}
		if r.WorstRho > r.BudgetRho*(1+1e-9) {
			t.Errorf("%s: worst rho %v exceeds budget %v", tc.alg, r.WorstRho, r.BudgetRho)
		}
		want, _ := privacy.LedgerEpsilon(r.WorstRho, delta)
		if r.WorstEpsilon != want {
			t.Errorf("%s: worst eps %v, want %v", tc.alg, r.WorstEpsilon, want)
		}
		if !(r.ExpectedRho > 0 && r.ExpectedRho <= r.WorstRho && r.ExpectedEpsilon <= r.WorstEpsilon) {
			t.Errorf("%s: expected rho %v eps %v vs worst %v %v", tc.alg, r.ExpectedRho, r.ExpectedEpsilon, r.WorstRho, r.WorstEpsilon)
		}
		if len(r.Noise) == 0 || !(r.Noise[0].Sigma > 0) {
			t.Errorf("%s: noise %+v", tc.alg, r.Noise)
		}
	}
	r, _ := Compute(base("cdpsgd"), delta)
	if r.WorstParticipations != 67 {
		t.Errorf("cdpsgd worst participations %d, want ceil(200*10/30) = 67", r.WorstParticipations)
	}
	if !(r.AmplifiedEpsilon > 0 && r.AmplifiedEpsilon < r.WorstEpsilon) {
		t.Errorf("amplified eps %v, worst %v", r.AmplifiedEpsilon, r.WorstEpsilon)
	}
	// Single-pass noisy SGD composes in parallel: the worst case is one
	// release, calibrated to the whole budget, and no amplified estimate.
	ns, _ := Compute(base("noisysgd"), delta)
	if math.Abs(ns.WorstRho-ns.BudgetRho) > 1e-9*ns.BudgetRho || ns.AmplifiedEpsilon != 0 {
		t.Errorf("noisysgd: worst rho %v, budget %v, amplified %v", ns.WorstRho, ns.BudgetRho, ns.AmplifiedEpsilon)
	}
	// A release cap below T: nc's worst case is the cap, its noise is
	// calibrated with H_cap (first release: (2S/b) sqrt(H_50) / rho_p
	// with the literal H_50 = 4.499205338329425), and the cap's releases
	// use the whole budget; the fresh-noise algorithms plan at most cap
	// releases (sigma = Delta sqrt(cap / (2 budget))).
	capped := base("nc")
	capped.MaxReleases = 50
	rc, err := Compute(capped, delta)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2.0 / 16 * math.Sqrt(4.499205338329425) / 2; rc.WorstParticipations != 50 || math.Abs(rc.Noise[0].Sigma-want) > 1e-12*want ||
		math.Abs(rc.WorstRho-budget) > 1e-9*budget {
		t.Errorf("nc capped at 50: worst %d releases, rho %v (budget %v), sigma_1 %v (want %v)", rc.WorstParticipations, rc.WorstRho, budget, rc.Noise[0].Sigma, want)
	}
	cs := base("soteria-sgd")
	cs.MaxReleases = 40
	rs, err := Compute(cs, delta)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2.0 / 16 * math.Sqrt(40/(2*budget)); rs.WorstParticipations != 40 || math.Abs(rs.Noise[0].Sigma-want) > 1e-12*want {
		t.Errorf("soteria-sgd capped at 40: worst %d releases, sigma %v (want 40, %v)", rs.WorstParticipations, rs.Noise[0].Sigma, want)
	}
	np, err := Compute(optim.Params{Algorithm: "mu2", M: 3, Cohort: 3, Rounds: 5, Batch: 2, Eta: 0.1}, delta)
	if err != nil || np.Private || np.WorstEpsilon != 0 {
		t.Errorf("non-private: %+v %v", np, err)
	}
}

func TestForNoiseRoundTrip(t *testing.T) {
	for _, alg := range []string{"nc", "trusted", "noisysgd", "soteria-svrg"} {
		p, err := ForNoise(base(alg), 0.37)
		if err != nil {
			t.Fatal(err)
		}
		s, err := algo.NoiseScale(p, 1)
		if err != nil || math.Abs(s-0.37) > 1e-12 {
			t.Errorf("%s: sigma %v (%v), want 0.37", alg, s, err)
		}
	}
	if _, err := ForNoise(base("nc"), 0); err == nil {
		t.Error("sigma 0 accepted")
	}
	if _, err := ForNoise(base("mu2"), 1); err == nil {
		t.Error("non-private algorithm accepted")
	}
}
