package device

import (
	"context"
	"errors"
	"flag"
	"math"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/plan"
	"browserfl/shared/privacy"
	"browserfl/shared/wire"
)

func demoSession() wire.SessionParams {
	return wire.SessionParams{Name: "demo", Dim: 7850, DeadlineMillis: 20000, Algorithm: "nc", Model: "logreg",
		Features: 784, Classes: 10, M: 30, Cohort: 10, Rounds: 200, Batch: 32, Clip: 1, Eta: 0.02, Epsilon: 7.92, Delta: 1e-5}
}

// TestCheckSessionPolicy: the delta attack (epsilon 8 announced at
// delta 0.999, i.e. rho 14.9 instead of 1.388) is refused by the zero
// policy, which is the page's default budget; it would pass if the
// budget were read at the session's delta.
func TestCheckSessionPolicy(t *testing.T) {
	attack := demoSession()
	attack.Rho, attack.Epsilon, attack.Delta = 0, 8, 0.999
	honest := demoSession()
	honest.Rho, honest.Epsilon, honest.Delta = 0, 8, 1e-5
	trusted := demoSession()
	trusted.Algorithm = "trusted"
	open := demoSession()
	open.Algorithm, open.Epsilon, open.Delta = "mu2", 0, 0
	f, err := SessionFigures(demoSession(), 0)
	if err != nil {
		t.Fatal(err)
	}
	exact := plan.Budget{Epsilon: f.Epsilon, Delta: plan.DefaultDelta}
	below := plan.Budget{Epsilon: math.Nextafter(f.Epsilon, 0), Delta: plan.DefaultDelta}
	tests := []struct {
		name string
		s    wire.SessionParams
		pol  Policy
		ok   bool
	}{
		{"demo, default budget", demoSession(), Policy{}, true},
		{"epsilon 8 at delta 0.999, default budget", attack, Policy{}, false},
		{"epsilon 8 at delta 0.999, explicit (8, 1e-5)", attack, Policy{Budget: plan.DefaultBudget()}, false},
		{"epsilon 8 at delta 1e-5, default budget", honest, Policy{}, true},
		{"epsilon 8 at delta 0.999, unlimited", attack, Policy{Unlimited: true}, true},
		{"budget equal to the worst case", demoSession(), Policy{Budget: exact}, true},
		{"budget one ulp below the worst case", demoSession(), Policy{Budget: below}, false},
		{"spent before leaves too little", demoSession(), Policy{Budget: exact, Spent: privacy.Charged(1e-6)}, false},
		{"spent before, default budget with room", demoSession(), Policy{Spent: privacy.Charged(0.02)}, true},
		{"spent before, default budget without room", demoSession(), Policy{Spent: privacy.Charged(0.03)}, false},
		{"trusted refused", trusted, Policy{}, false},
		{"trusted allowed", trusted, Policy{AllowTrusted: true}, true},
		{"non-private refused", open, Policy{}, false},
		{"non-private refused even unlimited", open, Policy{Unlimited: true}, false},
		{"non-private allowed", open, Policy{AllowNonPrivate: true}, true},
	}
	for _, tc := range tests {
		err := CheckSession(tc.s, tc.pol)
		if (err == nil) != tc.ok {
			t.Errorf("%s: CheckSession = %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v does not wrap ErrRefused", tc.name, err)
		}
	}
}

// TestPolicyAllows is the per-release guard of the runtime: a ledger
// exactly at the budget passes, one 1e-9 (relative) above it does not.
// (The exact-GDP conversion is flat at the scale of one ulp of rho: its
// erfc arithmetic resolves rho to about 1e-12, not to the last bit.)
func TestPolicyAllows(t *testing.T) {
	b := plan.DefaultBudget()
	rho, err := b.Rho()
	if err != nil {
		t.Fatal(err)
	}
	atBudget, _ := privacy.LedgerEpsilon(rho, b.Delta)
	pol := Policy{Budget: plan.Budget{Epsilon: atBudget, Delta: b.Delta}}
	tests := []struct {
		name string
		pol  Policy
		rho  float64
		ok   bool
	}{
		{"at the budget", pol, rho, true},
		{"just over", pol, rho * (1 + 1e-9), false},
		{"spent counts", Policy{Budget: pol.Budget, Spent: privacy.Charged(rho / 2)}, rho/2 + 1e-9, false},
		{"default budget, rho 1.387", Policy{}, 1.387, true},
		{"default budget, rho 1.389", Policy{}, 1.389, false},
		// Read at delta 0.999, epsilon 8 would allow rho 14.9.
		{"default budget is read at 1e-5", Policy{}, 14, false},
		{"unlimited", Policy{Unlimited: true}, 1e6, true},
	}
	for _, tc := range tests {
		if err := tc.pol.allows(privacy.Charged(tc.rho)); (err == nil) != tc.ok {
			t.Errorf("%s: allows(%v) = %v, want ok %v", tc.name, tc.rho, err, tc.ok)
		}
	}
}

func TestNewBudget(t *testing.T) {
	base := Config{URL: "ws://x/ws", JoinCode: "c", Storage: &MemStorage{}, Data: []dataset.Sample{{X: []float32{0}}}}
	def, _ := plan.DefaultBudget().Rho()
	tests := []struct {
		name string
		edit func(*Config)
		want float64 // budget rho; NaN = New fails
	}{
		{"zero budget is the default, not unlimited", func(*Config) {}, def},
		{"spent is subtracted", func(c *Config) { c.Spent = privacy.Charged(0.2) }, def - 0.2},
		{"unlimited is explicit", func(c *Config) { c.Unlimited = true }, math.Inf(1)},
		{"unlimited with a budget", func(c *Config) { c.Unlimited, c.Budget = true, plan.DefaultBudget() }, math.NaN()},
		{"budget without delta", func(c *Config) { c.Budget = plan.Budget{Epsilon: 8} }, math.NaN()},
		{"negative spent", func(c *Config) { c.Spent = privacy.Charged(-1) }, math.NaN()},
	}
	for _, tc := range tests {
		cfg := base
		cfg.Storage = &MemStorage{}
		tc.edit(&cfg)
		rt, err := New(context.Background(), cfg)
		if math.IsNaN(tc.want) {
			if err == nil {
				t.Errorf("%s: accepted", tc.name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if rt.budget != tc.want {
			t.Errorf("%s: budget rho %v, want %v", tc.name, rt.budget, tc.want)
		}
	}
}

func TestPolicyFlags(t *testing.T) {
	tests := []struct {
		args []string
		want Policy
		err  bool
	}{
		{nil, Policy{Budget: plan.DefaultBudget()}, false},
		{[]string{"-budget", "4", "-budget-delta", "1e-6"}, Policy{Budget: plan.Budget{Epsilon: 4, Delta: 1e-6}}, false},
		{[]string{"-budget", "0"}, Policy{}, true}, // 0 is not "unlimited"
		{[]string{"-budget", "8", "-budget-delta", "1"}, Policy{}, true},
		{[]string{"-unlimited"}, Policy{Unlimited: true}, false},
		{[]string{"-allow-nonprivate", "-allow-trusted"}, Policy{Budget: plan.DefaultBudget(), AllowNonPrivate: true, AllowTrusted: true}, false},
	}
	for _, tc := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		get := PolicyFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		pol, err := get()
		if (err != nil) != tc.err || (err == nil && pol != tc.want) {
			t.Errorf("%v: policy %+v, %v; want %+v (error %v)", tc.args, pol, err, tc.want, tc.err)
		}
	}
}
