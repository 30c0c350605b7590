package plan

import (
	"strings"
	"testing"

	"browserfl/shared/optim"
)

// modeSession is the demo session run by algorithm alg (a soteria
// estimator over the whole local data gets the data's size).
func modeSession(alg string) optim.Params {
	p := demo()
	p.Algorithm = alg
	if alg == "soteria-svrg" || alg == "soteria-saga" {
		p.LocalSize = 6400
	}
	if alg == "local" {
		p.LocalSteps = 4
	}
	if alg == "mu2" || alg == "sgd" {
		p.Epsilon, p.Delta = 0, 0 // no privacy target
	}
	return p
}

// TestFiguresEveryMode: for each algorithm a page can be offered, the
// figures say whom they hold against (Protection) and Text says it in
// the same words on every surface: a trusted session's epsilon holds
// against everyone but the server, a non-private one gives none, and a
// last-iterate session's figure is never called zCDP.
func TestFiguresEveryMode(t *testing.T) {
	for _, c := range []struct {
		p          optim.Params
		protection string
		text       []string // Text contains each
		not        []string // and none of these
	}{
		{modeSession("nc"), ProtectionDevice, []string{"ε = 7.92 at δ = 1e-5 (zCDP ρ = 1.365, 200 releases at most)"}, []string{"server"}},
		{modeSession("trusted"), ProtectionServer, []string{"ε = 7.92 at δ = 1e-5 against everyone but the server", "un-noised", "not bounded"}, nil},
		{modeSession("noisysgd"), ProtectionDevice, []string{"ε = ", "zCDP ρ = "}, []string{"server"}},
		{modeSession("cdpsgd"), ProtectionDevice, []string{"ε = ", "zCDP ρ = "}, []string{"server"}},
		{modeSession("soteria-sgd"), ProtectionDevice, []string{"ε = ", "zCDP ρ = "}, []string{"server"}},
		{modeSession("soteria-svrg"), ProtectionDevice, []string{"ε = ", "zCDP ρ = "}, []string{"server"}},
		{modeSession("soteria-saga"), ProtectionDevice, []string{"ε = ", "zCDP ρ = "}, []string{"server"}},
		{modeSession("local"), ProtectionDevice, []string{"ε = ", "zCDP ρ = "}, []string{"server", "Gaussian DP"}},
		{certifiedSession(), ProtectionDevice, []string{"ε = ", "zCDP ρ = "}, []string{"server", "Gaussian DP"}},
		{modeSession("mu2"), ProtectionNone, []string{"no privacy guarantee"}, []string{"ε"}},
		{modeSession("sgd"), ProtectionNone, []string{"no privacy guarantee"}, []string{"ε"}},
	} {
		name := c.p.Algorithm
		if c.p.LocalEpochs > 1 {
			name += " (output perturbation)"
		}
		t.Run(name, func(t *testing.T) {
			f, err := SessionFigures(c.p, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Protection(); got != c.protection {
				t.Errorf("Protection() = %q, want %q", got, c.protection)
			}
			text := f.Text()
			for _, w := range c.text {
				if !strings.Contains(text, w) {
					t.Errorf("Text() = %q, want it to contain %q", text, w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(text, w) {
					t.Errorf("Text() = %q, must not contain %q", text, w)
				}
			}
			if f.LastIterate != f.WorstSpent.LastIterate {
				t.Errorf("LastIterate %v, worst-case ledger %+v", f.LastIterate, f.WorstSpent)
			}
			if _, err := f.Published(1); (err == nil) != (c.protection == ProtectionServer) {
				t.Errorf("Published(1): %v", err)
			}
		})
	}
}

// TestPublished: a trusted session's figure against everyone but the
// server grows with the rounds published and reaches the session's worst
// case (the same ledger, bit for bit) at its last round; it never goes
// past it.
func TestPublished(t *testing.T) {
	f, err := SessionFigures(modeSession("trusted"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if f.WorstReleases != 200 || !(f.RoundRho > 0) {
		t.Fatalf("figures %+v", f)
	}
	prev := -1.0
	for _, n := range []int{-1, 0, 1, 17, 199, 200, 201, 1000} {
		s, err := f.Published(n)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case n <= 0 && s.Rho != 0:
			t.Errorf("Published(%d) = %+v, want nothing", n, s)
		case n >= 200 && s != f.WorstSpent:
			t.Errorf("Published(%d) = %+v, want the worst case %+v", n, s, f.WorstSpent)
		case s.Rho < prev:
			t.Errorf("Published(%d) = %+v, below the round before", n, s)
		}
		prev = s.Rho
	}
	s, _ := f.Published(17)
	if want := 17 * f.RoundRho; s.Rho < want*(1-1e-12) || s.Rho > want*(1+1e-12) {
		t.Errorf("Published(17).Rho = %v, want 17 rounds' %v", s.Rho, want)
	}
}
