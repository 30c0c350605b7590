package sim

import (
	"context"
	"math"
	"slices"
	"testing"
)

// TestChecksBoundTheSpike runs one hostile device of 20 that pushes the
// bias of class 0 as hard as the server allows, once with the norm bound
// alone and once with every test, and compares how far the final model's
// bias moved from the honest run's: the tests must cut it at least
// threefold (measured: about elevenfold). No honest message is refused in
// any run, and without attackers the tests change nothing, bit for bit.
func TestChecksBoundTheSpike(t *testing.T) {
	ctx := context.Background()
	honest, err := Run(ctx, config("nc", 3))
	if err != nil {
		t.Fatal(err)
	}
	plain := config("nc", 3)
	plain.NormOnly = true
	same, err := Run(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(honest.Model, same.Model) || honest.RejectedHonest+same.RejectedHonest != 0 {
		t.Fatalf("honest runs differ with and without the tests (refused %d, %d)", honest.RejectedHonest, same.RejectedHonest)
	}
	const bias0 = 8 // logreg, 8 features: W_0 (8) then b_0
	shift := map[bool]float64{}
	for _, normOnly := range []bool{true, false} {
		cfg := config("nc", 3)
		cfg.Attack, cfg.Attackers, cfg.NormOnly = AttackSpike, 1, normOnly
		res, err := Run(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.RejectedHonest != 0 {
			t.Errorf("norm only %v: %d honest messages refused", normOnly, res.RejectedHonest)
		}
		shift[normOnly] = math.Abs(res.Model[bias0] - honest.Model[bias0])
	}
	// A naive attacker (it assumes the norm bound only) is refused every
	// time by the server's other tests.
	cfg := config("nc", 3)
	cfg.Attack, cfg.Attackers, cfg.NaiveAttack = AttackSpike, 1, true
	naive, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if naive.RejectedHostile == 0 || naive.RejectedHonest != 0 || math.Abs(naive.Model[bias0]-honest.Model[bias0]) > shift[false] {
		t.Errorf("naive spike: %d hostile and %d honest refused, shift %.4g", naive.RejectedHostile, naive.RejectedHonest, math.Abs(naive.Model[bias0]-honest.Model[bias0]))
	}
	t.Logf("bias shift: norm bound only %.4g, all tests %.4g (naive attacker: %d refused, shift %.4g)",
		shift[true], shift[false], naive.RejectedHostile, math.Abs(naive.Model[bias0]-honest.Model[bias0]))
	if !(shift[false]*3 < shift[true]) {
		t.Errorf("the tests cut the hostile shift only from %.4g to %.4g", shift[true], shift[false])
	}
}

// TestAttackKindsRun runs every kind with two hostile devices: no error,
// no honest message refused.
func TestAttackKindsRun(t *testing.T) {
	for _, kind := range AttackKinds {
		cfg := config("nc", 5)
		cfg.Params.Rounds = 20
		cfg.Attack, cfg.Attackers = kind, 2
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if res.RejectedHonest != 0 {
			t.Errorf("%s: %d honest messages refused", kind, res.RejectedHonest)
		}
	}
}

func TestBadAttackConfig(t *testing.T) {
	for name, f := range map[string]func(*Config){
		"unknown kind":      func(c *Config) { c.Attack, c.Attackers = "nope", 1 },
		"more than M":       func(c *Config) { c.Attack, c.Attackers = AttackSpike, 21 },
		"negative":          func(c *Config) { c.Attack, c.Attackers = AttackSpike, -1 },
		"sparse compressor": func(c *Config) { c.Attack, c.Attackers, c.Params.Compressor = AttackSpike, 1, "randk:0.5" },
		"error feedback":    func(c *Config) { c.Attack, c.Attackers, c.Params.Compressor = AttackSpike, 1, "ef+f64" },
	} {
		cfg := config("nc", 1)
		f(&cfg)
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestHonestMeasures checks the figures docs/security.md reads off the
// honest devices ("An assumed signal bound"): the run's largest estimate
// norm and distance from the round's mean are the largest of the rounds'
// records, within what clipping allows (S = 1, plus the grid's rounding),
// the distance at most twice the norm; the sum rate is positive (every
// device's estimates point somewhat the same way) and below the largest
// norm (a run of n estimates is at most n times it, and it is below S);
// and without MeasureSums it is not measured.
func TestHonestMeasures(t *testing.T) {
	cfg := config("nc", 3)
	cfg.MeasureSums = true
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var signal, drift float64
	for _, r := range res.Records {
		signal, drift = max(signal, r.HonestSignal), max(drift, r.HonestDrift)
	}
	if res.HonestSignal != signal || res.HonestDrift != drift {
		t.Errorf("run's norm %v, distance %v; largest of the rounds' %v, %v", res.HonestSignal, res.HonestDrift, signal, drift)
	}
	if !(signal > 0 && signal <= 1+1e-3) || !(drift > 0 && drift <= 2*signal) {
		t.Errorf("largest honest estimate %v (want in (0, S]), distance %v (want in (0, 2 x norm])", signal, drift)
	}
	if !(res.HonestSumRate > 0 && res.HonestSumRate <= signal) {
		t.Errorf("sum rate %v, want in (0, %v]", res.HonestSumRate, signal)
	}
	t.Logf("largest honest estimate %.4g, distance %.4g, sum rate %.4g", signal, drift, res.HonestSumRate)
	cfg.MeasureSums = false
	if res, err = Run(context.Background(), cfg); err != nil || res.HonestSumRate != 0 || res.HonestSignal != signal {
		t.Errorf("without MeasureSums: sum rate %v, norm %v (%v)", res.HonestSumRate, res.HonestSignal, err)
	}
}
