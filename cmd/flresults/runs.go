package main

import (
	"browserfl/sim"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// outcome is what the report needs from one run.
type outcome struct {
	acc, loss      float64
	uplink         int64
	maxRho, maxEps float64
	rounds         int
	recs           []sim.Record
}

// summarize returns the outcome of a run's records: its last
// evaluation and its final traffic and privacy.
func summarize(recs []sim.Record) outcome {
	oc := outcome{acc: math.NaN(), loss: math.NaN(), recs: recs}
	for _, r := range recs {
		if !math.IsNaN(r.Accuracy) {
			oc.acc, oc.loss = r.Accuracy, r.Loss
		}
	}
	if n := len(recs); n > 0 {
		last := recs[n-1]
		oc.uplink, oc.maxRho, oc.maxEps, oc.rounds = last.CumUplinkBytes, last.MaxRho, last.MaxEpsilon, last.Round
	}
	return oc
}

// writeRun writes a run's per-round CSV, gzipped (the M = 1 runs have
// 60,000 rounds). It writes a temporary file and renames it, so a file on
// disk is always a finished run.
func writeRun(path string, recs []sim.Record) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	zw := gzip.NewWriter(f)
	if err := sim.WriteCSV(zw, recs, "test"); err != nil {
		f.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return fmt.Errorf("compress %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	return os.Rename(tmp, path)
}

// readOutcome reads a run's CSV back.
func readOutcome(path string) (outcome, error) {
	f, err := os.Open(path)
	if err != nil {
		return outcome{}, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return outcome{}, fmt.Errorf("read %s: %w", path, err)
	}
	rows, err := csv.NewReader(zr).ReadAll()
	if err != nil {
		return outcome{}, fmt.Errorf("read %s: %w", path, err)
	}
	if len(rows) < 2 {
		return outcome{}, fmt.Errorf("read %s: no rounds", path)
	}
	var recs []sim.Record
	for i, row := range rows[1:] {
		// 13 fields since the floor (sim.Record's MaxFloorEpsilon), 12
		// since the honest devices' measures (HonestSignal,
		// HonestDrift); caches written before have 12 or 10.
		if len(row) != 10 && len(row) != 12 && len(row) != 13 {
			return outcome{}, fmt.Errorf("read %s: row %d has %d fields, want 13 (or 12 or 10 from an older cache)", path, i+2, len(row))
		}
		var r sim.Record
		var errs []error
		num := func(s string) float64 {
			v, err := strconv.ParseFloat(s, 64)
			errs = append(errs, err)
			return v
		}
		r.Round = int(num(row[0]))
		r.Accuracy, r.Loss = num(row[1]), num(row[2])
		r.UplinkBytes, r.DownlinkBytes = int64(num(row[3])), int64(num(row[4]))
		r.CumUplinkBytes, r.CumDownlinkBytes = int64(num(row[5])), int64(num(row[6]))
		r.Participants = int(num(row[7]))
		r.MaxRho, r.MaxEpsilon = num(row[8]), num(row[9])
		if len(row) >= 12 {
			r.HonestSignal, r.HonestDrift = num(row[10]), num(row[11])
		}
		r.MaxFloorEpsilon = r.MaxEpsilon
		if len(row) == 13 {
			r.MaxFloorEpsilon = num(row[12])
		}
		if err := errors.Join(errs...); err != nil {
			return outcome{}, fmt.Errorf("read %s: row %d: %w", path, i+2, err)
		}
		recs = append(recs, r)
	}
	return summarize(recs), nil
}

// writePlots draws each group's accuracy curves from its runs cached
// under cache (by round and by uplink bytes) into dir.
func writePlots(cache, dir string, groups []group) error {
	for _, g := range groups {
		if g.plot == "" {
			continue
		}
		runs := map[string][]sim.Record{}
		var order []string
		for _, e := range g.runs {
			oc, err := readOutcome(filepath.Join(cache, e.id+".csv.gz"))
			if err != nil {
				continue
			}
			runs[e.label] = oc.recs
			order = append(order, e.label)
		}
		if len(order) == 0 {
			continue
		}
		byRound, byBytes := sim.AccuracyCharts(g.title, runs, order)
		if err := byRound.Save(filepath.Join(dir, g.plot+"-rounds.svg")); err != nil {
			return err
		}
		if err := byBytes.Save(filepath.Join(dir, g.plot+"-bytes.svg")); err != nil {
			return err
		}
	}
	return nil
}
