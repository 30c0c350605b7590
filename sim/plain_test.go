package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
)

// plainNC is the benchmark baseline of the simulator: the "nc" algorithm
// (noise cancellation, single pass, dense float32 uplink) written as
// straight single-threaded loops, without the simulator's machinery
// (no optim.Device or optim.Server, no encoding, no validation, no
// ledger, no worker pool, no records). It uses the same model code
// (model.Factored's ghost clipping for logistic regression, as the
// device; model.GradDiff and mechanism.Clip otherwise), the same grid and
// the same exact discrete Gaussian sampler (Stream.FillDiscreteGaussian)
// with the same seeds as Run, so that Run and plainNC do the same
// arithmetic and the comparison measures orchestration overhead, not a
// cheaper sampler. TestPlainMatchesRun checks that both return the same
// model bit for bit.
//
// It supports exactly what the Table-1 setting needs: "nc", no
// compressor, every device with enough fresh samples eligible (no budget
// refusals: nc's plan never exhausts a device within T releases).
// Evaluation is left to the caller (one model.Evaluate of the result).
func plainNC(cfg Config) ([]float64, error) {
	p := cfg.Params
	p.Features, p.Classes = cfg.Train.Features, cfg.Train.Classes
	if p.Algorithm != "nc" || p.Compressor != "" {
		return nil, fmt.Errorf("plainNC: only nc with dense float32, got %q %q", p.Algorithm, p.Compressor)
	}
	parts, err := cfg.Partition.Partition(cfg.Train.Labels(), p.M, cfg.Seed)
	if err != nil {
		return nil, err
	}
	mdl, err := model.New(p.Model, p.Features, p.Classes)
	if err != nil {
		return nil, err
	}
	d := mdl.Dim()
	fm, ghost := mdl.(model.Factored)
	b := p.Batch
	S := p.S()
	sens := algo.Sensitivity(p)
	step, err := mechanism.GridStep(sens, d)
	if err != nil {
		return nil, err
	}

	// Server state: x, x_prev, w, qtilde.
	x := make([]float64, d)
	model.Init(mdl, x, cfg.Seed)
	radius := p.Diameter / 2
	if radius > 0 {
		mechanism.Clip(x, radius)
	}
	w := append([]float64(nil), x...)
	xprev := append([]float64(nil), x...)
	q := make([]float64, d)
	sum := make([]float64, d)

	// Device state: data, cursor, participations, Y_i on the grid.
	type dev struct {
		shard   []dataset.Sample
		cursor  int
		n       int
		y, ynew []int64
		seeds   *mechanism.Stream
	}
	devs := make([]dev, p.M)
	for i := range devs {
		shard := make([]dataset.Sample, len(parts[i]))
		for j, k := range parts[i] {
			shard[j] = cfg.Train.Samples[k]
		}
		devs[i] = dev{shard: shard, y: make([]int64, d), ynew: make([]int64, d),
			seeds: mechanism.NewStream(seedFor(cfg.Seed, "device", i), 0)}
	}
	g := make([]float64, d)
	xr, xpr := make([]float64, d), make([]float64, d) // x and x_prev as the devices receive them
	v := make([]float64, d)
	vz := make([]int64, d)
	noise := mechanism.NewStream(mechanism.Seed{}, mechanism.PurposeNoise)
	eligible := make([]int, 0, p.M)
	inv := 1 / float64(p.Cohort)

	for t := 1; t <= p.Rounds; t++ {
		eligible = eligible[:0]
		for i := range devs {
			if len(devs[i].shard)-devs[i].cursor >= b {
				eligible = append(eligible, i)
			}
		}
		if len(eligible) == 0 {
			break
		}
		cohort := optim.SampleCohort(eligible, p.Cohort, cfg.Seed, t)
		slices.Sort(cohort) // updates are summed in device order
		clear(sum)
		tf := float64(t)
		// The round frame carries x and x_prev as float32.
		for i := range x {
			xr[i], xpr[i] = float64(float32(x[i])), float64(float32(xprev[i]))
		}
		for _, id := range cohort {
			dv := &devs[id]
			var seed mechanism.Seed
			dv.seeds.Read(seed[:]) // the device's release seed
			// Mean of the clipped per-sample corrections: for a
			// rank-one model (logistic regression) clipped from the
			// norm of the factors and added without forming the
			// d-vector, as the device does ("ghost clipping").
			clear(v)
			for j := 0; j < b; j++ {
				s := dv.shard[dv.cursor+j]
				if ghost {
					n := fm.FactorGradDiff(tf, xr, tf-1, xpr, s)
					fm.AddFactor(v, mechanism.ClipFactor(n, S)/float64(b))
					continue
				}
				model.GradDiff(mdl, g, tf, xr, tf-1, xpr, s)
				mechanism.Clip(g, S)
				for i, gi := range g {
					v[i] += gi / float64(b)
				}
			}
			dv.cursor += b
			dv.n++
			if err := mechanism.ToGrid(vz, v, step); err != nil {
				return nil, err
			}
			// New Y_i, and release Z = v + Y_new - Y_old on the grid.
			sigmaZ, err := mechanism.DiscreteSigma(algo.NCSigma(p, dv.n), sens, step, d)
			if err != nil {
				return nil, err
			}
			noise.Reset(seed, mechanism.PurposeNoise)
			noise.FillDiscreteGaussian(dv.ynew, sigmaZ)
			for i := range vz {
				z := step * float64(vz[i]+dv.ynew[i]-dv.y[i])
				sum[i] += float64(float32(z)) // the dense float32 uplink
			}
			dv.y, dv.ynew = dv.ynew, dv.y
		}
		// Server: qtilde += sum/m; w = Pi(w - eta qtilde); x = (1-c) x + c w.
		for i, s := range sum {
			q[i] += s * inv
		}
		for i := range w {
			w[i] -= p.Eta * q[i]
		}
		if radius > 0 {
			mechanism.Clip(w, radius)
		}
		c := 2 / float64(t+2)
		copy(xprev, x)
		for i := range x {
			x[i] = (1-c)*x[i] + c*w[i]
		}
	}
	for _, xi := range x {
		if math.IsNaN(xi) || math.IsInf(xi, 0) {
			return nil, fmt.Errorf("plainNC: model diverged")
		}
	}
	return x, nil
}

// TestPlainMatchesRun is what makes the simulator benchmark fair: the
// plain baseline and Run, with any number of workers, compute the same
// model bit for bit from the same seeds, so they do the same arithmetic
// and draw the same noise. The cases cover b = 1 and b > 1, a projected
// run (D > 0) and runs whose last rounds have fewer eligible devices than
// m (single pass: devices run dry).
func TestPlainMatchesRun(t *testing.T) {
	cases := []struct {
		name    string
		mut     func(*Config)
		workers []int
	}{
		{"b=2", func(*Config) {}, []int{1, 3}},
		{"b=1", func(c *Config) { c.Params.Batch, c.Params.Rounds = 1, 120 }, []int{1, 2}},
		{"projected", func(c *Config) { c.Params.Diameter, c.Params.Eta = 0.5, 0.05 }, []int{2}},
		{"runs dry", func(c *Config) { c.Params.Rounds = 80 }, []int{1, 4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := config("nc", 9)
			tc.mut(&c)
			want, err := plainNC(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.workers {
				c.Workers = w
				res, err := Run(context.Background(), c)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(res.Model, want) {
					t.Fatalf("workers=%d: simulator and plain loops differ (first coordinates %v vs %v)", w, res.Model[:3], want[:3])
				}
			}
		})
	}
}
