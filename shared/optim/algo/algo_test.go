package algo

import (
	"math"
	"strings"
	"testing"

	"browserfl/shared/mechanism"
	"browserfl/shared/session"
)

// baseParams is a valid session of alg: logreg on 5 features, 3 classes.
func baseParams(alg string) session.Params {
	p := session.Params{Algorithm: alg, Model: "logreg", Features: 5, Classes: 3,
		M: 8, Cohort: 4, Rounds: 60, Batch: 2, Clip: 1, Eta: 0.05, Diameter: 20}
	switch alg {
	case "nc", "shared", "trusted", "noisysgd", "local":
		p.Rho = 8
	case "cdpsgd", "soteria-sgd", "soteria-svrg", "soteria-saga":
		p.Epsilon, p.Delta = 8, 1e-5
		p.LocalSize = 20
	}
	return p
}

func TestValidate(t *testing.T) {
	ok := baseParams("nc")
	tests := []struct {
		name string
		edit func(*session.Params)
		want string // substring of the error; "" = valid
	}{
		{"valid nc", func(p *session.Params) {}, ""},
		{"unknown algorithm", func(p *session.Params) { p.Algorithm = "adam" }, "unknown algorithm"},
		{"cohort above M", func(p *session.Params) { p.Cohort = 9 }, "cohort"},
		{"no rounds", func(p *session.Params) { p.Rounds = 0 }, "rounds"},
		{"too many rounds", func(p *session.Params) { p.Rounds, p.MaxReleases = session.MaxRounds+1, 0 }, "T <= 1000000"},
		{"no batch", func(p *session.Params) { p.Batch = 0 }, "batch"},
		{"eta NaN", func(p *session.Params) { p.Eta = math.NaN() }, "eta"},
		{"no clip", func(p *session.Params) { p.Clip = 0 }, "clipping bound"},
		{"clip from G L D", func(p *session.Params) { p.Clip, p.G, p.L, p.Diameter = 0, 1, 2, 0.1 }, ""},
		{"no privacy", func(p *session.Params) { p.Rho = 0 }, "privacy target"},
		{"both targets", func(p *session.Params) { p.Epsilon, p.Delta = 1, 1e-5 }, "either rho"},
		{"bad delta", func(p *session.Params) { p.Rho, p.Epsilon, p.Delta = 0, 1, 2 }, "delta"},
		{"bad compressor", func(p *session.Params) { p.Compressor = "zip" }, "compressor"},
		{"non-private with rho", func(p *session.Params) { p.Algorithm = "mu2" }, "not private"},
		{"svrg without local", func(p *session.Params) { p.Algorithm, p.Rho, p.Epsilon, p.Delta = "soteria-svrg", 0, 1, 1e-5 }, "local size"},
		{"soteria with ef", func(p *session.Params) {
			p.Algorithm, p.Rho, p.Epsilon, p.Delta, p.Compressor = "soteria-sgd", 0, 1, 1e-5, "ef+topk:0.1"
		}, "error feedback"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := ok
			tc.edit(&p)
			err := Validate(p)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	want := []string{"cdpsgd", "local", "mu2", "nc", "noisysgd", "sgd", "shared", "soteria-saga", "soteria-sgd", "soteria-svrg", "trusted"}
	got := Names()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, n := range got {
		p := baseParams(n)
		if err := Validate(p); err != nil {
			t.Errorf("%s: base params invalid: %v", n, err)
		}
	}
}

func TestNCTheoremEta(t *testing.T) {
	// The paper's Table-1 setting: rho = 8, D = 0.1, m = 50, M = 100,
	// T = 1200, d = 7850, S = G + 2LD with G = 39.6, L = 392.5.
	p := session.Params{Algorithm: "nc", M: 100, Cohort: 50, Rounds: 1200, Batch: 1, G: 39.6, L: 392.5, Diameter: 0.1, Rho: 8, Eta: 1}
	if math.Abs(p.S()-118.1) > 1e-9 {
		t.Fatalf("S = %v, want 118.1", p.S())
	}
	first := 8 * 0.1 * 50 / (2 * 118.1 * 1200 * math.Sqrt(2*100*7850*(1+math.Log(1200))))
	second := 1 / (8 * 392.5 * 1200)
	want := math.Min(first, second)
	if got := NCTheoremEta(p, 7850); math.Abs(got-want) > 1e-15*want {
		t.Fatalf("eta = %v, want %v", got, want)
	}
}

// TestHarmonic pins H_K, the factor of the "nc" calibration, to values
// computed independently (30-digit arithmetic), on both sides of the
// switch from summation to the asymptotic bound at 1,024 terms. The value
// may exceed H_K by 1.1e-8 relative (a little more noise) but never fall
// below it (less noise than the charge assumes).
func TestHarmonic(t *testing.T) {
	tests := []struct {
		k    int
		want float64
	}{
		{0, 0}, {1, 1}, {2, 1.5}, {600, 6.9749784219695953816}, {1024, 7.5091756722781338334},
		{1025, 7.5101512820342313944}, {5000, 9.0945088529844369673},
		{1000000, 14.392726722865723631}, {1000000000, 21.300481502347944017},
	}
	for _, tc := range tests {
		got := Harmonic(tc.k)
		if got < tc.want*(1-1e-13) || got > tc.want*(1+1.1e-8) {
			t.Errorf("Harmonic(%d) = %.17g, want %.17g (never below, at most 1.1e-8 above)", tc.k, got, tc.want)
		}
	}
}

// TestTrustedRefusesCompressors: a trusted session's devices send clean
// updates, so only dense messages keep the sensitivity the server's noise
// is calibrated to (top-k moves a message by up to S for one sample,
// rand-k scales by d/k, error feedback carries a sample into later
// rounds, quantisation rounds by more than float32).
func TestTrustedRefusesCompressors(t *testing.T) {
	for _, tc := range []struct {
		spec string
		ok   bool
	}{
		{"", true}, {"f32", true}, {"f64", true},
		{"topk:0.1", false}, {"randk:0.1", false}, {"ef+f32", false}, {"ef+topk:0.1", false}, {"qinf:8bit", false},
	} {
		p := session.Params{Algorithm: "trusted", Model: "logreg", M: 10, Cohort: 10, Rounds: 5, Batch: 32, Clip: 1, Eta: 0.1, Rho: 1.5, Compressor: tc.spec}
		err := Validate(p)
		if (err == nil) != tc.ok {
			t.Errorf("trusted with %q: err = %v, want ok = %v", tc.spec, err, tc.ok)
		}
	}
}

// TestValidateRefusesTinyTargets: a privacy target whose noise no exact
// sampler can draw is refused for every private algorithm: an epsilon
// whose budget rounds to 0 (no finite noise), a rho whose noise would be
// 5% past the sampler's range; 5% inside it is accepted. A target let
// through would leave the update checks at "finiteness only" (an
// infinite bound) and every honest device unable to release.
func TestValidateRefusesTinyTargets(t *testing.T) {
	for _, alg := range []string{"nc", "shared", "trusted", "noisysgd", "local", "cdpsgd", "soteria-sgd", "soteria-svrg"} {
		t.Run(alg, func(t *testing.T) {
			p := baseParams(alg)
			p.Rho, p.Epsilon, p.Delta = 0, 1e-300, 1e-5
			if err := Validate(p); err == nil || !strings.Contains(err.Error(), "too small") {
				t.Errorf("epsilon 1e-300: %v, want a target too small", err)
			}
			// With a rho target the noise scales as 1/rho_p (fresh noise:
			// 1/sqrt(rho) with rho = rho_p^2/2, the same).
			p = baseParams(alg)
			p.Rho, p.Epsilon, p.Delta = 1, 0, 0
			k, _ := Lookup(alg)
			z1 := noiseMultiplier(p, k.Kind)
			for _, dim := range []int{0, 7850} {
				// The least the sampler must draw: z times the grid
				// sensitivity, at least (GridFactor + 1) sqrt(d).
				limit := mechanism.MaxDiscreteSigma / ((mechanism.GridFactor + 1) * math.Sqrt(float64(max(dim, 1))))
				p.Dim = dim
				for _, c := range []struct {
					over float64
					ok   bool
				}{{1.05, false}, {0.95, true}} {
					p.Rho = z1 / (c.over * limit)
					err := Validate(p)
					if c.ok && err != nil || !c.ok && (err == nil || !strings.Contains(err.Error(), "too small")) {
						t.Errorf("d = %d, noise %g times the sampler's range: %v", dim, c.over, err)
					}
				}
			}
		})
	}
}
