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
