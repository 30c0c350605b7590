package main

import (
	"browserfl/shared/plan"
	"browserfl/sim"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// reportDelta is the delta at which epsilon is reported: -report-delta,
// or the page's default.
func reportDelta(o options) float64 {
	if o.reportDelta > 0 {
		return o.reportDelta
	}
	return plan.DefaultDelta
}

// writeOutputs writes the per-round CSV and the accuracy plot at -out.
func writeOutputs(o options, res sim.Result) error {
	if dir := filepath.Dir(o.out); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create output directory: %w", err)
		}
	}
	f, err := os.Create(o.out + ".csv")
	if err != nil {
		return fmt.Errorf("create csv: %w", err)
	}
	if err := sim.WriteCSV(f, res.Records); err != nil {
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
	if f, err := plan.SessionFigures(o.p, reportDelta(o)); err == nil && f.Private {
		fmt.Fprintf(stdout, "session figures per device (worst case): %s\n", f.Text())
	}
	if last.MaxRho > 0 {
		fmt.Fprintf(stdout, "privacy spent per device (worst device): zCDP rho = %s, i.e. (epsilon = %s, delta = %s)-DP\n",
			plan.FormatRho(last.MaxRho), plan.FormatEpsilon(last.MaxEpsilon), plan.FormatDelta(reportDelta(o)))
	} else {
		fmt.Fprintln(stdout, "privacy: none (non-private or trusted-server algorithm: no device-side guarantee spent)")
	}
}
