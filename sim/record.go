package sim

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// Record is one row of the per-round CSV the simulator writes.
type Record struct {
	Round int
	// Accuracy and Loss of the evaluated model on the test set; NaN in
	// rounds that were not evaluated.
	Accuracy, Loss float64
	// UplinkBytes and DownlinkBytes are this round's exact encoded bytes,
	// summed over the cohort; the Cum* fields are running totals.
	UplinkBytes, DownlinkBytes       int64
	CumUplinkBytes, CumDownlinkBytes int64
	// Participants is the number of included updates this round.
	Participants int
	// MaxRho is the largest rho (Bun–Steinke; for a last-iterate ledger
	// read by Gaussian DP, never as zCDP) spent by any device so far;
	// MaxEpsilon is that device's epsilon at the run's Delta. In
	// "trusted", where the devices charge nothing, both are what the
	// published models carry about a sample of the device first included
	// (plan.Figures.Published): the figure against everyone but the
	// server, which sees un-noised updates and is bounded by nothing.
	MaxRho, MaxEpsilon float64
	// MaxFloorEpsilon is, in a shared-noise session, the same device's
	// floor (plan.Figures.FloorOf its ledger): what it keeps against a
	// coordinator that runs fake devices. In every other session it is
	// MaxEpsilon (one figure, as plan.Figures states them).
	MaxFloorEpsilon float64
	// HonestSignal is the largest norm of an honest cohort member's
	// un-noised estimate this round (Result.HonestSignal is the largest
	// over the run). HonestDrift is the largest distance of one from
	// the mean of the round's honest estimates.
	HonestSignal, HonestDrift float64
}

// csvHeader is the header row of the per-round CSV: its second and
// third columns are named for the evaluation ("test", or "validation"
// for a run that chooses hyperparameters).
func csvHeader(eval string) []string {
	return append([]string{"round", eval + "_accuracy", eval + "_loss"}, csvColumns...)
}

var csvColumns = []string{"uplink_bytes", "downlink_bytes",
	"cum_uplink_bytes", "cum_downlink_bytes", "participants", "max_device_rho", "max_device_epsilon", "max_honest_estimate_norm", "max_honest_drift", "max_device_floor_epsilon"}

// WriteCSV writes records as CSV with a header row; eval names the set
// the accuracy and loss were measured on ("test" or "validation").
func WriteCSV(w io.Writer, recs []Record, eval string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader(eval)); err != nil {
		return fmt.Errorf("write csv header: %w", err)
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 8, 64) }
	for _, r := range recs {
		row := []string{strconv.Itoa(r.Round), f(r.Accuracy), f(r.Loss),
			strconv.FormatInt(r.UplinkBytes, 10), strconv.FormatInt(r.DownlinkBytes, 10),
			strconv.FormatInt(r.CumUplinkBytes, 10), strconv.FormatInt(r.CumDownlinkBytes, 10),
			strconv.Itoa(r.Participants), f(r.MaxRho), f(r.MaxEpsilon), f(r.HonestSignal), f(r.HonestDrift), f(r.MaxFloorEpsilon)}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("write csv round %d: %w", r.Round, err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}
