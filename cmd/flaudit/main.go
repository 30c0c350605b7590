// Command flaudit runs the empirical privacy audit of package
// browserfl/sim/audit: a white-box membership experiment with a gradient
// canary on one device's released messages, for each algorithm and target
// epsilon asked for, and prints the lower bound on epsilon next to the
// product's own figure (plan.SessionFigures). See docs/audit.md.
//
//	flaudit                                   # nc, noisysgd and local at epsilon 1, 4, 8 (docs/audit.md)
//	flaudit -alg local -b 4                   # local with K = 4 hidden steps of one sample (latch canary)
//	flaudit -alg local -b 4 -latch 0          # the same with the linear canary
//	flaudit -alg nc -epsilon 8 -trials 200000
//	flaudit -alg nc -epsilon 4 -noise-factor 0.5   # a deliberately broken mechanism
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"browserfl/internal/sessionflag"
	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/sim"
	"browserfl/sim/audit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "flaudit:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, out, progress io.Writer) error {
	fs := flag.NewFlagSet("flaudit", flag.ContinueOnError)
	fs.SetOutput(progress)
	// The session's flags (internal/sessionflag) set the audited session,
	// with flaudit's defaults; -K and -E are its names for local's K and E.
	// -alg and -epsilon are flaudit's own: lists, one cell per algorithm
	// and target.
	base := optim.Params{Rounds: 10, Batch: 1, Clip: 1, Eta: 0.1, Delta: plan.DefaultDelta}
	sessionflag.RegisterFlags(fs, &base,
		sessionflag.Flag{Name: "T", Note: "the device takes part in all of them"},
		sessionflag.Flag{Name: "b"}, sessionflag.Flag{Name: "clip"}, sessionflag.Flag{Name: "delta"},
		sessionflag.Flag{Name: "local-steps", As: "K"},
		sessionflag.Flag{Name: "local-epochs", As: "E", Note: "with E >= 2 the canary is the certified linear loss (linear-unit) and the device releases by output perturbation (docs/privacy.md 4b)"})
	algs := fs.String("alg", strings.Join(audit.Algorithms, ","), "comma-separated algorithms to audit ("+strings.Join(audit.Algorithms, ", ")+")")
	epsList := fs.String("epsilon", "1,4,8", "comma-separated target epsilons per device (the session's target; the claim is the product's figure for it)")
	ownerDelta := fs.Float64("owner-delta", plan.DefaultDelta, "the owner's delta: the claim (plan.SessionFigures) and the lower bound are stated at it")
	latch := fs.Float64("latch", 3.5, "local with K >= 2: the latch canary, its threshold in per-step noise standard deviations below the canary's mean (0: the linear canary)")
	dim := fs.Int("dim", 2, "model dimension of the audit's linear loss")
	trials := fs.Int("trials", 450000, "evaluation trials per cell")
	sel := fs.Int("select", 50000, "threshold-selection trials per cell (separate from the evaluation trials)")
	alpha := fs.Float64("alpha", 0.05, "confidence failure of each lower bound (0.05: 95%)")
	seed := fs.Uint64("seed", 1, "seed (every trial is a deterministic function of it)")
	workers := fs.Int("workers", 0, "goroutines (0: GOMAXPROCS)")
	factor := fs.Float64("noise-factor", 1, "multiply the device's noise by this (below 1: a deliberately broken mechanism)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if !(*factor > 0) || math.IsInf(*factor, 0) {
		return fmt.Errorf("-noise-factor %v: want a finite value > 0", *factor)
	}
	if !(*ownerDelta > 0 && *ownerDelta < 1) {
		return fmt.Errorf("-owner-delta %v: want 0 < delta < 1", *ownerDelta)
	}
	var epss []float64
	for _, s := range strings.Split(*epsList, ",") {
		e, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return fmt.Errorf("-epsilon: %w", err)
		}
		epss = append(epss, e)
	}
	// Every cell is checked before the first runs: a bad name or value
	// at the end of a list must not cost the cells before it.
	type cell struct {
		alg   string
		eps   float64
		z     float64
		label string
		cfg   audit.Config
	}
	var cells []cell
	for _, alg := range strings.Split(*algs, ",") {
		alg = strings.TrimSpace(alg)
		for _, e := range epss {
			p := base
			p.Algorithm, p.Epsilon = alg, e
			z := 0.0
			if alg != "local" {
				p.LocalSteps, p.LocalEpochs = 0, 0
			} else if p.LocalK() >= 2 && p.LocalEpochs < 2 {
				z = *latch
			}
			c := cell{alg: alg, eps: e, z: z, label: fmt.Sprintf("%s ε=%g", alg, e), cfg: audit.Config{
				Params: p, Dim: *dim, OwnerDelta: *ownerDelta,
				Select: *sel, Trials: *trials, Alpha: *alpha, Seed: *seed, Workers: *workers,
				NoiseFactor: *factor, Latch: z,
			}}
			if err := audit.Check(c.cfg); err != nil {
				return fmt.Errorf("%s: %w", c.label, err)
			}
			cells = append(cells, c)
		}
	}
	fmt.Fprintf(out, "white-box canary audit: T = %d, b = %d, K = %d (local), S = %g, d = %d, targets at delta %s, claims at the owner's delta %s, %d selection + %d evaluation trials per cell, seed %d, noise factor %g\n",
		base.Rounds, base.Batch, base.LocalK(), base.Clip, *dim, plan.FormatDelta(base.Delta), plan.FormatDelta(*ownerDelta), *sel, *trials, *seed, *factor)
	fmt.Fprintf(out, "| algorithm | target ε | claimed ε (plan.SessionFigures) | FPR ≤ | FNR ≤ | ε lower bound (%g%%) | lower bound ÷ claim | μ observed | μ expected | μ claimed | GDP ε of μ observed |\n", 100*(1-*alpha))
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, c := range cells {
		pr := sim.NewProgress(progress, c.label, *sel+*trials)
		cfg := c.cfg
		cfg.Progress = func(done, _ int) { pr.Update(done, "") }
		res, err := audit.Run(ctx, cfg)
		pr.Done()
		if err != nil {
			return fmt.Errorf("%s: %w", c.label, err)
		}
		name := rowName(c.alg, base.Batch, base.LocalK(), base.LocalEpochs, c.z)
		muExp := "–"
		if res.MuExpected > 0 {
			muExp = fmt.Sprintf("%.3f", res.MuExpected)
		}
		fmt.Fprintf(out, "| %s | %g | %s | %.3g | %.3g | %.3f | %.3f | %.3f | %s | %.3f | %.3f |\n",
			name, c.eps, res.Claim.EpsilonText(), res.Bound.FPRHi, res.Bound.FNRHi, res.Bound.Epsilon, res.Tightness, res.MuHat, muExp, res.MuClaim, res.GDPEpsilon)
	}
	return nil
}

// rowName names an algorithm's row: local's with its K, its batch b
// when b > 1, E and canary (the latch's threshold z, or 0 for the
// linear one).
func rowName(alg string, b, k, epochs int, z float64) string {
	if alg != "local" {
		return alg
	}
	steps := fmt.Sprintf("K = %d", k)
	if b > 1 {
		steps += fmt.Sprintf(", b = %d", b)
	}
	switch {
	case z > 0:
		return fmt.Sprintf("local (%s, latch %g)", steps, z)
	case epochs >= 2:
		return fmt.Sprintf("local (%s, E = %d, linear-unit)", steps, epochs)
	}
	return fmt.Sprintf("local (%s, linear)", steps)
}
