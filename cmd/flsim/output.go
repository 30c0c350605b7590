package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"browserfl/shared/plan"
	"browserfl/sim"
)

// checkOut checks that the outputs at prefix out (out.csv and the plot,
// out.ext) can be written, creating their directory: out names a file
// prefix, not a directory.
func checkOut(out, ext string) error {
	if base := filepath.Base(out); out == "" || strings.HasSuffix(out, string(filepath.Separator)) || base == "." || base == ".." {
		return fmt.Errorf("-out %q: want a file prefix such as out/run (it writes out/run.csv and out/run.%s)", out, ext)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("-out: create output directory: %w", err)
	}
	for _, name := range []string{out + ".csv", out + "." + ext} {
		_, statErr := os.Stat(name)
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("-out: %w", err)
		}
		f.Close()
		if errors.Is(statErr, fs.ErrNotExist) {
			os.Remove(name) // a probe: the run writes it
		}
	}
	return nil
}

// writeOutputs writes the per-round CSV (its accuracy named for the set
// evaluated, evalName) and the accuracy plot at -out.
func writeOutputs(o options, res sim.Result, evalName string) error {
	if dir := filepath.Dir(o.out); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create output directory: %w", err)
		}
	}
	f, err := os.Create(o.out + ".csv")
	if err != nil {
		return fmt.Errorf("create csv: %w", err)
	}
	if err := sim.WriteCSV(f, res.Records, evalName); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close csv: %w", err)
	}
	byRound, _ := sim.AccuracyCharts(fmt.Sprintf("%s, M=%d, m=%d", o.p.Algorithm, o.p.M, o.p.Cohort),
		map[string][]sim.Record{o.p.Algorithm: res.Records}, []string{o.p.Algorithm})
	return byRound.Save(o.out + "." + o.plotExt)
}

// printSummary prints the run's parameters, its final accuracy and
// traffic, the attack's refusals and the privacy spent per device.
func printSummary(stdout io.Writer, o options, res sim.Result, evalName string) {
	last := res.Records[len(res.Records)-1]
	fmt.Fprintf(stdout, "algorithm=%s model=%s M=%d m=%d T=%d b=%d S=%.4g eta=%.4g (%s) max releases=%d compressor=%q\n",
		o.p.Algorithm, o.p.Model, o.p.M, o.p.Cohort, o.p.Rounds, o.p.Batch, o.p.S(), o.p.Eta, o.eta, o.p.ReleaseCap(), o.p.Compressor)
	fmt.Fprintf(stdout, "rounds run %d, %s accuracy %.4f, %s loss %.4f, uplink %d bytes, downlink %d bytes, declined %d, %.1fs\n",
		res.Rounds, evalName, res.FinalAccuracy, evalName, res.FinalLoss, last.CumUplinkBytes, last.CumDownlinkBytes, res.Declined, res.Elapsed.Seconds())
	if o.attack != "" || res.RejectedHonest > 0 || res.RejectedHostile > 0 {
		fmt.Fprintf(stdout, "attack %q by %d of %d devices: updates refused: %d hostile, %d honest\n",
			o.attack, o.attackers, o.p.M, res.RejectedHostile, res.RejectedHonest)
	}
	f, ferr := plan.SessionFigures(o.p, o.reportDelta)
	if ferr == nil && f.Private {
		fmt.Fprintf(stdout, "session figures per device (worst case): %s\n", f.Text())
	}
	if ferr == nil && f.Shared {
		fmt.Fprintf(stdout, "shared noise, per device (worst case): promise epsilon = %s (the server sees only sums of at least %d updates, at most %d of them its own), floor epsilon = %s (every other device fake)\n",
			f.PromiseText(), f.Threshold, f.Colluders, f.FloorText())
	}
	fmt.Fprintln(stdout, spentLine(f, ferr, last, o.reportDelta))
}

// spentLine says what the worst device spent, against whom: with the
// devices' own noise, everyone; in the trusted mode, everyone but the
// server (which sees un-noised updates, bounded by nothing); a
// last-iterate ledger's rho is read by Gaussian DP and never called
// zCDP.
func spentLine(f plan.Figures, ferr error, last sim.Record, delta float64) string {
	rho := "zCDP rho"
	if f.LastIterate {
		rho = "ledger rho (read as Gaussian DP)"
	}
	switch {
	case ferr == nil && f.Protection() == plan.ProtectionServer:
		return fmt.Sprintf("privacy against the server: none (it sees un-noised updates); against everyone else (other devices, anyone who sees a published model), worst device: rho = %s, i.e. (epsilon = %s, delta = %s)-DP",
			plan.FormatRho(last.MaxRho), plan.FormatEpsilon(last.MaxEpsilon), plan.FormatDelta(delta))
	case last.MaxRho > 0 && ferr == nil && f.Shared:
		floor := "unavailable"
		if e := last.MaxFloorEpsilon; !math.IsNaN(e) {
			floor = plan.FormatEpsilon(e)
		}
		return fmt.Sprintf("privacy spent per device (worst device): if the other devices are real (the promise), %s = %s, i.e. (epsilon = %s, delta = %s)-DP; from its own noise alone (the floor), epsilon = %s",
			rho, plan.FormatRho(last.MaxRho), plan.FormatEpsilon(last.MaxEpsilon), plan.FormatDelta(delta), floor)
	case last.MaxRho > 0:
		return fmt.Sprintf("privacy spent per device (worst device): %s = %s, i.e. (epsilon = %s, delta = %s)-DP",
			rho, plan.FormatRho(last.MaxRho), plan.FormatEpsilon(last.MaxEpsilon), plan.FormatDelta(delta))
	case ferr == nil && !f.Private:
		return "privacy: none (a non-private reference: no noise, no guarantee)"
	}
	return "privacy spent per device (worst device): nothing yet"
}
