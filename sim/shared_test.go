package sim

import (
	"context"
	"testing"

	"browserfl/shared/optim"
)

// sharedConfig is a shared-noise session of 10 devices, all in every
// round (threshold 7).
func sharedConfig(seed uint64) Config {
	cfg := config("nc", seed)
	cfg.Params = optim.Params{Algorithm: "shared", Model: "logreg", M: 10, Cohort: 10, Rounds: 20, Batch: 2, Clip: 1, Eta: 0.01, Rho: 20, Compressor: "f64"}
	return cfg
}

// TestSharedSumCheck runs the shared-noise path: the server sees only
// each round's sum (in the ring, engine.RingSum) and tests only it
// (engine.CheckSum).
//
//   - Honest: every round commits the sum of all 10; no sum is refused.
//   - One wrapping device (a coordinate at the ring's largest value): every
//     attempt's sum is refused and discarded, no round commits, nothing is
//     applied, and the run ends without error when the devices have made
//     every release they may (each attempt costs one); no honest device's
//     message is ever refused on its own (the server sees none).
//   - One spike device, scaled to pass the sum's tests: every round
//     commits, and no sum is refused.
func TestSharedSumCheck(t *testing.T) {
	ctx := context.Background()
	honest, err := Run(ctx, sharedConfig(3))
	if err != nil {
		t.Fatal(err)
	}
	if honest.RejectedSums != 0 || honest.Rounds != 20 || len(honest.Included) != 20 {
		t.Fatalf("honest: %d sums refused, %d rounds, %d committed", honest.RejectedSums, honest.Rounds, len(honest.Included))
	}
	for i, inc := range honest.Included {
		if len(inc) != 10 {
			t.Fatalf("honest round %d included %v", i+1, inc)
		}
	}
	wrap := sharedConfig(3)
	wrap.Attack, wrap.Attackers = AttackWrap, 1
	res, err := Run(ctx, wrap)
	if err != nil {
		t.Fatalf("wrap: %v", err)
	}
	// Every device may make T = 20 releases: 20 attempts, all refused;
	// then every device declines (a round without updates).
	applied := 0
	for _, inc := range res.Included {
		applied += len(inc)
	}
	if res.RejectedSums != 20 || res.RejectedSumsHonest != 0 || applied != 0 || res.RejectedHonest+res.RejectedHostile != 0 {
		t.Errorf("wrap: %d sums refused (%d without the hostile device), %d updates applied, %d messages refused; want 20, 0, 0, 0",
			res.RejectedSums, res.RejectedSumsHonest, applied, res.RejectedHonest+res.RejectedHostile)
	}
	spike := sharedConfig(3)
	spike.Attack, spike.Attackers = AttackSpike, 1
	if res, err = Run(ctx, spike); err != nil {
		t.Fatalf("spike: %v", err)
	}
	if res.RejectedSums != 0 || len(res.Included) != 20 {
		t.Errorf("spike: %d sums refused, %d rounds committed; want 0, 20", res.RejectedSums, len(res.Included))
	}
}
