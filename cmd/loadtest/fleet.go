package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"browserfl/device"
	"browserfl/internal/loadtest"
	"browserfl/shared/dataset"
	"browserfl/shared/wire"
)

// fleet is the load test's devices: one device runtime per goroutine,
// each with its own small synthetic data set.
type fleet struct {
	ctx                        context.Context // the devices' (cancelled by stop)
	start                      time.Time
	connected, failed, dropped atomic.Int64
	prepNanos                  atomic.Int64 // assignment received to update sent, summed
	errs                       chan error
	wg                         sync.WaitGroup
	cancel                     context.CancelFunc
}

// startFleet starts devices lo to hi-1 (newFleet, then launch). The
// returned fleet is never nil: stop it (also on error).
func startFleet(ctx context.Context, o options, pol device.Policy, sess wire.SessionParams, lo, hi int, target func(i int) (string, *http.Client)) (*fleet, error) {
	f := newFleet(ctx, hi-lo)
	return f, f.launch(o, pol, sess, lo, hi, target)
}

// direct is the target of every device: url, dialled directly.
func direct(url string) func(int) (string, *http.Client) {
	return func(int) (string, *http.Client) { return url, nil }
}

// edgeTargets spreads devices over edges: device i dials edge i mod
// len(edges) and, when that one refuses the connection (it died), the
// next ones in turn, as devices behind a load balancer would.
func edgeTargets(edges []string) func(int) (string, *http.Client) {
	clients := make([]*http.Client, len(edges))
	for k := range clients {
		d := &net.Dialer{Timeout: 5 * time.Second}
		clients[k] = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var last error
			for j := range edges {
				c, err := d.DialContext(ctx, network, edges[(k+j)%len(edges)])
				if err == nil {
					return c, nil
				}
				last = err
			}
			return nil, last
		}}}
	}
	return func(i int) (string, *http.Client) { return "ws://edges/ws", clients[i%len(clients)] }
}

// samplesPerDevice is the fewest synthetic samples a device holds by
// default: one pass over them allows samplesPerDevice / b rounds.
const samplesPerDevice = 8

// samplesPer is the synthetic samples each device holds: -samples, or
// enough for twice the releases an average device makes in the run
// (T m / n, rounded up), and at least samplesPerDevice. With exactly the
// average a device asked more often than others, or one whose update was
// excluded, runs out before the end: -n 3000 -m 300 -T 80 with 8 samples
// each stopped at round 73 with every device gone (2026-11-29).
func (o options) samplesPer() int {
	if o.samples > 0 {
		return o.samples
	}
	n := max(o.n-o.drop, 1) // the devices of -drop send nothing
	avg := (o.T*o.m + n - 1) / n
	return max(samplesPerDevice, 2*avg*max(o.batch, 1))
}

// newFleet returns an empty fleet for n devices whose lives end with ctx.
func newFleet(ctx context.Context, n int) *fleet {
	devCtx, cancel := context.WithCancel(ctx)
	return &fleet{ctx: devCtx, start: time.Now(), errs: make(chan error, n), cancel: cancel}
}

// launch starts devices lo to hi-1, device i dialling target(i), o.stagger
// apart; devices 0 to o.drop-1 disconnect for good when first assigned a
// round. It returns when all are started, or with the fleet's context's
// error.
func (f *fleet) launch(o options, pol device.Policy, sess wire.SessionParams, lo, hi int, target func(i int) (string, *http.Client)) error {
	devCtx := f.ctx
	for i := lo; i < hi; i++ {
		rng := rand.New(rand.NewPCG(uint64(i), 17))
		data := make([]dataset.Sample, o.samplesPer())
		for j := range data {
			x := make([]float32, sess.Features)
			for k := range x {
				x[k] = rng.Float32()
			}
			data[j] = dataset.Sample{X: x, Label: rng.IntN(sess.Classes)}
		}
		url, client := target(i)
		var roundStart time.Time
		dctx, dropDevice := context.WithCancel(devCtx)
		drop := i < o.drop
		cfg := device.Config{
			Transport: device.WebSocket{URL: url, HTTPClient: client}, JoinCode: "LOADTEST", Storage: &device.MemStorage{}, Data: data,
			MinBackoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Second,
			OnEvent: func(e device.Event) {
				switch e.Kind {
				case device.EventConnected:
					f.connected.Add(1)
				case device.EventRound:
					roundStart = time.Now()
					if drop {
						drop = false
						f.dropped.Add(1)
						dropDevice()
					}
				case device.EventSent:
					f.prepNanos.Add(int64(time.Since(roundStart)))
				}
			},
		}
		cfg.SetPolicy(pol)
		rt, err := device.New(devCtx, cfg)
		if err != nil {
			dropDevice()
			return err
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer dropDevice()
			if err := rt.Run(dctx); err != nil && !errors.Is(err, context.Canceled) {
				f.failed.Add(1)
				f.errs <- err
			}
		}()
		if err := loadtest.Sleep(devCtx, o.stagger); err != nil {
			return err
		}
	}
	return nil
}

// waitConnected waits until n devices have connected (a device that
// reconnects counts again), a device fails or ctx is done.
func (f *fleet) waitConnected(ctx context.Context, n int) error {
	for f.connected.Load() < int64(n) {
		if f.failed.Load() > 0 {
			return fmt.Errorf("a device failed: %w", <-f.errs)
		}
		if err := loadtest.Sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("%d of %d devices connected: %w", f.connected.Load(), n, err)
		}
	}
	return nil
}

// stop cancels every device and waits for them (idempotent).
func (f *fleet) stop() {
	f.cancel()
	f.wg.Wait()
}

func (f *fleet) droppedCount() int64 { return f.dropped.Load() }

// rss is the memory of the process that holds the devices.
func (f *fleet) rss() int64 {
	r, _ := loadtest.RSS(os.Getpid())
	return r
}

// rounds sums the coordinator's round records.
type rounds struct {
	lat                []float64 // round latency (start to commit) in ms, sorted
	bytesIn, bytesOut  int64     // update bytes in, assignment bytes out
	included, recorded int
	asked              int // devices asked, summed over the rounds (cohorts with over-selection)
}

// pointsPerAsk is the model points (d float32 values, 4d bytes) the
// coordinator sent per device asked: assignment bytes over 4d per ask
// (frame headers and the round's other fields count too, a few hundred
// bytes against 4d).
func (r rounds) pointsPerAsk(d int) float64 {
	return float64(r.bytesOut) / float64(max(1, r.asked)) / float64(4*d)
}

// readRounds reads the records of rounds 1 to T of the coordinator at
// base (later rounds are ignored).
func readRounds(ctx context.Context, base string, T int) (rounds, error) {
	var r rounds
	recs, err := loadtest.Rounds(ctx, base, 0)
	if err != nil {
		return r, err
	}
	recs = slices.DeleteFunc(recs, func(rec loadtest.RoundRecord) bool {
		return rec.T > T
	})
	if len(recs) != T {
		return r, fmt.Errorf("%d rounds recorded, want %d", len(recs), T)
	}
	r.recorded = len(recs)
	for _, rec := range recs {
		r.lat = append(r.lat, float64(rec.LatencyMs))
		r.bytesIn += rec.BytesIn
		r.bytesOut += rec.BytesOut
		r.included += rec.Included
		r.asked += rec.Cohort
	}
	slices.Sort(r.lat)
	return r, nil
}
