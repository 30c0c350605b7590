// Command flplan prints the privacy plan of a training session: the noise
// standard deviation each party uses and each device's worst-case epsilon
// at delta, computed by the same functions the coordinator and the device
// use (browserfl/shared/plan).
//
//	flplan -alg nc -T 200 -M 30 -m 10 -b 32 -epsilon 7.92 -delta 1e-5    # the demo session
//	flplan -alg nc -T 1200 -M 100 -m 50 -b 1 -epsilon 8 -samples 600   # Table 1, one pass
//	flplan -alg trusted -T 200 -M 30 -m 10 -b 16 -clip 1 -sigma 0.05 -delta 1e-5
//	flplan -proactive-tables     # recompute Tables 9-11 of the proactive-DP paper
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"browserfl/internal/sessionflag"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
	"browserfl/shared/plan"
	"browserfl/shared/privacy"
	"browserfl/shared/task"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "flplan:", err)
		os.Exit(2)
	}
}

// run plans the session of args, printing the plan to out and the
// flags' usage (-h, or a flag it cannot parse) to usage.
func run(args []string, out, usage io.Writer) error {
	fs := flag.NewFlagSet("flplan", flag.ContinueOnError)
	fs.SetOutput(usage)
	// The session's flags (internal/sessionflag), with flplan's defaults
	// and its historical names -alg and -local (beside -algorithm and -local-size).
	p := optim.Params{Algorithm: "nc", Model: "logreg", Features: 784, Classes: 10, Rounds: 100, M: 30, Cohort: 10,
		Batch: 32, Clip: 1, Eta: 0.1, Delta: plan.DefaultDelta}
	sessionflag.Register(fs, &p, "features", "classes", "T", "M", "m", "b", "clip", "local-steps", "local-epochs",
		"threshold", "colluders", "max-releases", "rho", "epsilon", "delta", "model")
	sessionflag.RegisterFlags(fs, &p,
		sessionflag.Flag{Name: "algorithm", As: "alg"},
		sessionflag.Flag{Name: "algorithm", Note: "the same as -alg (flsim's and the coordinator's name)"},
		sessionflag.Flag{Name: "local-size", As: "local", Note: "also enables the amplified estimate"},
		sessionflag.Flag{Name: "local-size", Note: "the same as -local (flsim's and the coordinator's name)"},
		sessionflag.Flag{Name: "eta", Note: "validated only"})
	samples := fs.Int("samples", 0, "samples on the largest device: for a single-pass algorithm, sets -max-releases to floor(samples / b) (at most T)")
	ownerDelta := fs.Float64("owner-delta", plan.DefaultDelta, "the owner's delta, at which every epsilon is reported (as on the page and the dashboard)")
	sigma := fs.Float64("sigma", 0, "instead of a target: the noise std of the first release")
	tables := fs.Bool("proactive-tables", false, "print the recomputed Tables 9-11 of the proactive-DP paper and exit")
	taskName := fs.String("task", "", "the session's task, instead of -features, -classes and -model: "+strings.Join(task.Names(), ", "))
	taskFile := fs.String("task-file", "", "a task definition (browserfl.task/v1 JSON, docs/tasks.md), instead of -features, -classes and -model; its privacy target, if it states one, instead of -epsilon and -delta (as the coordinator reads it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	def, err := applyTask(fs, &p, *taskName, *taskFile)
	if err != nil {
		return err
	}
	if def != nil && def.Privacy.Epsilon > 0 {
		// The coordinator's target for the task (plan.WithTask).
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		if err := sessionflag.TaskTargetClash(def.Name, def.Privacy.Epsilon, func(name string) bool { return given[name] }); err != nil {
			return err
		}
		p.Epsilon, p.Delta = def.Privacy.Epsilon, def.Privacy.Delta
		if p.Delta == 0 {
			p.Delta = plan.DefaultDelta
		}
	}
	if *tables {
		return printProactiveTables(out)
	}
	if _, err := model.New(p.Model, p.Features, p.Classes); err != nil {
		return err
	}
	if *samples < 0 {
		return fmt.Errorf("-samples %d: want the samples on the largest device, or 0 for none given", *samples)
	}
	if *samples > 0 {
		if p.MaxReleases != 0 {
			return errors.New("give -samples or -max-releases, not both")
		}
		if !p.SinglePass() {
			return fmt.Errorf("-samples: %s is not single-pass (it reuses samples); set -max-releases instead", p.Algorithm)
		}
		if p.MaxReleases = p.SinglePassReleases(*samples); p.MaxReleases < 1 {
			return fmt.Errorf("-samples %d: fewer than one minibatch of b = %d", *samples, p.Batch)
		}
	}
	set := 0
	for _, v := range []float64{p.Rho, p.Epsilon, *sigma} {
		if v != 0 {
			set++
		}
	}
	if set != 1 && p.Algorithm != "mu2" && p.Algorithm != "sgd" {
		return errors.New("give exactly one of -rho, -epsilon (with -delta) or -sigma")
	}
	if p.Epsilon == 0 {
		p.Delta = 0 // -delta is the -epsilon target's
	}
	if *sigma != 0 && p.Rho == 0 && p.Epsilon == 0 {
		q, err := plan.ForNoise(p, *sigma)
		if err != nil {
			return err
		}
		p = q
	}
	r, err := plan.Compute(p, *ownerDelta)
	if err != nil {
		return err
	}
	f, err := plan.SessionFigures(p, *ownerDelta)
	if err != nil {
		return err
	}
	printReport(out, p, r, f)
	if f.Shared {
		fmt.Fprintf(out, "shared noise: each device draws %.4g of nc's noise (h = %d honest survivors of t = %d, c = %d)\n", algo.ShareScale(p), f.Honest, f.Threshold, f.Colluders)
		fmt.Fprintf(out, "  promise (the server sees only sums of at least %d updates, at most %d of them its own): epsilon = %s\n", f.Threshold, f.Colluders, f.PromiseText())
		fmt.Fprintf(out, "  floor (every other device fake: this device's own noise alone):          epsilon = %s\n", f.FloorText())
	}
	return nil
}

func printReport(w io.Writer, p optim.Params, r plan.Report, f plan.Figures) {
	fmt.Fprintf(w, "algorithm %s: T=%d M=%d m=%d b=%d S=%g\n", p.Algorithm, p.Rounds, p.M, p.Cohort, p.Batch, p.S())
	if p.MaxReleases > 0 {
		fmt.Fprintf(w, "at most %d releases per device (devices refuse beyond; the noise is calibrated to it)\n", p.ReleaseCap())
	}
	if !r.Private {
		fmt.Fprintln(w, "not private: no noise, no guarantee")
		return
	}
	trust := "untrusted coordinator: no un-noised update leaves a device; the figures hold against everyone, the coordinator included"
	if f.Protection() == plan.ProtectionServer {
		trust = "trusted coordinator: it sees clipped, un-noised updates and nothing bounds what it learns; the figures below hold against everyone else (other devices, anyone who sees a published model)"
	}
	fmt.Fprintln(w, trust)
	kind := "standard zCDP"
	if f.LastIterate {
		// Proven as Gaussian DP only (docs/privacy.md 4b).
		kind = "the ledger's rho, read as Gaussian DP with mu = sqrt(2 rho), not a zCDP figure"
	}
	fmt.Fprintf(w, "budget per device: rho = %.6g (%s) = rho_p^2/2 with rho_p = %.6g\n", r.BudgetRho, kind, r.RhoPaper)
	fmt.Fprintln(w, "noise (per-coordinate standard deviation):")
	for _, n := range r.Noise {
		fmt.Fprintf(w, "  %-6s %-28s sigma = %.6g\n", n.Party, n.When, n.Sigma)
	}
	fmt.Fprintf(w, "per device, replace-one sample, ledger rho -> (epsilon, delta) by exact Gaussian DP (mu = sqrt(2 rho), discrete-noise coupling), at the owner's delta = %s:\n", f.DeltaText())
	fmt.Fprintf(w, "  worst case (%d releases):      rho = %.6g  epsilon = %s", r.WorstParticipations, r.WorstRho, f.EpsilonText())
	if r.WorstSpent.LastIterate {
		// No zCDP figure: the last-iterate charge is proven as Gaussian DP
		// plus a total-variation term only (docs/privacy.md 4b).
		fmt.Fprintf(w, "  (last-iterate charge: Gaussian DP plus its total-variation term %.3g, never the zCDP conversion)", r.WorstSpent.TV)
	} else if z, err := privacy.ZCDPToEpsilon(r.WorstRho, f.Delta); err == nil && plan.FormatEpsilon(z) != f.EpsilonText() {
		fmt.Fprintf(w, "  (zCDP with the Canonne-Kamath-Steinke conversion alone: %s)", plan.FormatEpsilon(z))
	}
	fmt.Fprintln(w)
	expected := fmt.Sprintf("%.1f participations", r.ExpectedParticipations)
	if r.ExpectedParticipations > float64(r.WorstParticipations) {
		// The device refuses beyond its cap: what it is asked past it
		// costs nothing.
		expected += fmt.Sprintf(", releasing at most %d", r.WorstParticipations)
	}
	fmt.Fprintf(w, "  expected (%s): rho = %.6g  epsilon = %s\n", expected, r.ExpectedRho, plan.FormatEpsilon(r.ExpectedEpsilon))
	if r.AmplifiedEpsilon > 0 {
		// Labelled so it cannot be read as a bound: the session samples
		// neither by Poisson nor with add/remove neighbours.
		fmt.Fprintf(w, "  NOT A GUARANTEE, for comparison with papers only: a subsampling-amplified RDP estimate that assumes Poisson sampling at rate b/local and add/remove neighbours, which this session does not use (the figures above are what a device's ledger holds): epsilon = %s\n", plan.FormatEpsilon(r.AmplifiedEpsilon))
	}
	if f.SessionDelta > 0 && f.SessionDelta != f.Delta {
		fmt.Fprintf(w, "  (the target was written at delta = %s; a device reads its owner's budget at the owner's delta, never at that one)\n", plan.FormatDelta(f.SessionDelta))
	}
	fmt.Fprintf(w, "figures (page, dashboard, docs): %s\n", f.Text())
}
