// Command flattack prints the attack table of docs/security.md: the final
// test accuracy of a session when K of its M devices are hostile, for
// each attack kind of the simulator (sim.AttackKinds), over several
// seeds, with the server's full tests (plausible.Checker) and with the norm
// bound alone (the server before them).
//
//	go run ./cmd/flattack                  # the table (about 15 minutes on 2 cores)
//	go run ./cmd/flattack -seeds 1 -K 0,1  # a quick look
//	go run ./cmd/flattack -compare=false -signal-bound 0.25  # with an assumed signal bound
//	go run ./cmd/flattack -K 0 -compare=false -partition shards  # honest devices on skewed shards
//
// The last column is measured on the honest devices of each cell (largest
// over devices, rounds and seeds): the norm of an estimate, its distance
// from the round's mean honest estimate, and the sum rate an assumed
// signal bound must exceed (sim.Result's HonestSignal, HonestDrift,
// HonestSumRate; docs/security.md, "An assumed signal bound").
//
// The session is the classroom's (nc, logistic regression, b = 32,
// rho_p = 1.5, eta = 0.02) with M = m = 10 and T = 100. With -algorithm
// shared the server sees only each round's sum (the simulator's
// secure aggregation) and tests only it; a refused sum (a discarded
// round) is counted as a hostile refusal if a hostile device was in it:
//
//	go run ./cmd/flattack -algorithm shared -compare=false -K 0,1,2 -kinds spike,block,signflip,ipm,wrap
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"browserfl/shared/dataset"
	"browserfl/sim"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "flattack:", err)
		os.Exit(2)
	}
}

// cell is the outcome of one kind and K over the seeds.
type cell struct {
	acc, accNorm          []float64
	hostileRef, honestRef int
	signal                float64 // largest honest estimate's norm (sim.Result.HonestSignal)
	drift, rate           float64 // sim.Result.HonestDrift, HonestSumRate
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	train, test, err := dataset.LoadFashionMNIST(o.dataDir)
	if err != nil {
		return err
	}
	p := o.p
	base := sim.Config{Params: p, Train: train, Test: test, Partition: o.partition, EvalEvery: p.Rounds, MeasureSums: true}
	one := func(kind string, k int, seed uint64, normOnly bool) (sim.Result, error) {
		cfg := base
		cfg.Seed = seed
		cfg.NormOnly = normOnly
		if k > 0 {
			cfg.Attack, cfg.Attackers, cfg.AttackCap = kind, k, o.cap
		}
		return sim.Run(ctx, cfg)
	}
	fmt.Fprintf(stdout, "%s, logreg, Fashion-MNIST (%s), M = m = %d, T = %d, b = %d, rho_p = %g, eta = %g; %d seeds; attack cap %g; signal bound %g\n\n",
		p.Algorithm, o.partition, p.M, p.Rounds, p.Batch, p.Rho, p.Eta, o.seeds, o.cap, p.SignalBound)
	fmt.Fprintln(stdout, "| attack | K | norm bound only | all tests | hostile refused | honest refused | honest estimates: norm, drift, sum rate |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|")
	var honest *cell
	for _, kind := range o.kinds {
		for _, k := range o.ks {
			if k == 0 && honest != nil {
				continue
			}
			var c cell
			for s := 1; s <= o.seeds; s++ {
				for _, normOnly := range []bool{false, true} {
					if normOnly && !o.compare {
						continue
					}
					res, err := one(kind, k, uint64(s), normOnly)
					if err != nil {
						return fmt.Errorf("%s K=%d seed %d: %w", kind, k, s, err)
					}
					if normOnly {
						c.accNorm = append(c.accNorm, res.FinalAccuracy)
						continue
					}
					c.acc = append(c.acc, res.FinalAccuracy)
					c.signal = max(c.signal, res.HonestSignal)
					c.drift, c.rate = max(c.drift, res.HonestDrift), max(c.rate, res.HonestSumRate)
					// In "shared" a refused sum counts for the hostile devices
					// if one was in it, else for the honest ones.
					c.hostileRef += res.RejectedHostile + res.RejectedSums - res.RejectedSumsHonest
					c.honestRef += res.RejectedHonest + res.RejectedSumsHonest
				}
				fmt.Fprintf(stderr, "\r%s K=%d seed %d done", kind, k, s)
			}
			name := kind
			if k == 0 {
				name, honest = "none", &c
			}
			fmt.Fprintf(stderr, "\r%40s\r", "")
			fmt.Fprintf(stdout, "| %s | %d | %s | %s | %d | %d | %.3f, %.3f, %.3f |\n", name, k, summary(c.accNorm), summary(c.acc), c.hostileRef, c.honestRef, c.signal, c.drift, c.rate)
		}
	}
	return nil
}
