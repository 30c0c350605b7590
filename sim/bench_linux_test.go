//go:build linux

package sim

import (
	"context"
	"flag"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"browserfl/internal/cputime"
	"browserfl/shared/dataset"
	"browserfl/shared/model"
	"browserfl/shared/optim"
)

var (
	table1Rounds = flag.Int("table1.rounds", 0, "BenchmarkTable1: rounds to run (0 = one pass, T = 1,200)")
	table1Eval   = flag.Int("table1.eval", 0, "BenchmarkTable1: simulator evaluates every K rounds (0 = 60, as cmd/flresults at T = 1,200)")
)

// table1Config is the Table-1 setting as cmd/flresults runs it
// (nc-table1-clip1, rho_p = 8): Fashion-MNIST logistic regression, M =
// 100, m = 50, b = 1, one pass (T = 60,000 / 50), S = 1, eta = 1e-3,
// evaluation on the whole test set every T/20 rounds.
func table1Config(b *testing.B) Config {
	train, test, err := dataset.LoadFashionMNIST(dataset.DefaultFashionMNISTDir)
	if err != nil {
		b.Skipf("Fashion-MNIST not available: %v", err)
	}
	p := optim.Params{Algorithm: "nc", Model: "logreg", M: 100, Cohort: 50, Rounds: len(train.Samples) / 50,
		Batch: 1, Rho: 8, Clip: 1, Eta: 1e-3}
	if *table1Rounds > 0 {
		p.Rounds = *table1Rounds
	}
	eval := len(train.Samples) / 50 / 20 // cmd/flresults: T/20 for the one-pass T
	if *table1Eval > 0 {
		eval = *table1Eval
	}
	return Config{Params: p, Train: train, Test: test, Partition: dataset.Scheme{Kind: dataset.SchemeIID},
		Seed: 1, EvalEvery: eval}
}

// processCPU is the CPU time (user + system) of the whole process, which
// counts every worker thread of a parallel run.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sample is one timed run.
type sample struct{ wall, thread, proc time.Duration }

// timed runs f and measures it. With lock, f runs locked to the calling
// OS thread so that the thread's CPU time is f's (single-threaded
// variants); a parallel run is not locked: a locked goroutine that waits
// for its workers every round hands its P to another thread and needs its
// own thread woken back, which costs the OS scheduler's latency on a
// loaded machine and is not how cmd/flsim runs.
func timed(lock bool, f func()) sample {
	if lock {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	w0, t0, p0 := time.Now(), cputime.Thread(), processCPU()
	f()
	return sample{time.Since(w0), time.Duration(cputime.Thread() - t0), processCPU() - p0}
}

// BenchmarkTable1 runs the Table-1 setting three ways, interleaved in one
// process, each iteration in turn:
//
//   - plain: plainNC, the algorithm as straight single-threaded loops
//     (same model code, same exact discrete Gaussian sampler, same seeds),
//     then one evaluation of the final model;
//   - sim1: Run with Workers = 1 (everything on the benchmark's thread),
//     evaluating every T/20 rounds as cmd/flresults does;
//   - simN: Run with Workers = GOMAXPROCS, likewise.
//
// All three must return the same model bit for bit (checked every
// iteration), so the ratios compare orchestration, not arithmetic. It
// reports, per variant, wall time and CPU time as ratios to plain
// (medians over the iterations):
// sim1-cpu-x is the thread CPU ratio (the simulator's overhead, immune to
// other jobs on the machine), simN-wall-x the goal (at most 1), simN-cpu-x
// the process CPU ratio (everything the parallel run burnt); plain-cores
// and simN-cores are the cores each got (process CPU / wall). A full
// iteration takes about a minute of CPU per variant; -table1.rounds
// shortens it (for profiles).
//
//	go test -run '^$' -bench Table1 -benchtime 1x -timeout 60m ./sim
//	go test -run '^$' -bench Table1 -benchtime 9x ./sim -table1.rounds=120
func BenchmarkTable1(b *testing.B) {
	cfg := table1Config(b)
	ctx := context.Background()
	workers := runtime.GOMAXPROCS(0)
	var plain, sim1, simN sample
	var cpu1, cpuN, wall1, wallN []float64 // per-iteration ratios to plain
	var want []float64                     // the plain loops' model
	var acc float64                        // and its accuracy
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run := func(w int) sample {
			c := cfg
			c.Workers = w
			return timed(w == 1, func() {
				res, err := Run(ctx, c)
				if err != nil {
					b.Fatal(err)
				}
				if !slices.Equal(res.Model, want) || res.FinalAccuracy != acc {
					b.Fatalf("workers=%d: model differs from the plain loops' (accuracy %v vs %v)", w, res.FinalAccuracy, acc)
				}
			})
		}
		baseline := func() sample {
			return timed(true, func() {
				x, err := plainNC(cfg)
				if err != nil {
					b.Fatal(err)
				}
				m, _ := model.New(cfg.Params.Model, cfg.Train.Features, cfg.Train.Classes)
				a, _ := model.Evaluate(m, x, cfg.Test.Samples)
				if want != nil && (!slices.Equal(x, want) || a != acc) {
					b.Fatal("plain loops: a second run gave another model")
				}
				acc, want = a, x
			})
		}
		// The baseline runs between the two simulator runs, whose order
		// alternates, so that each is next to the baseline in time half
		// of the iterations. The first simulator run is checked against
		// a model computed beforehand (the first iteration computes it
		// once more, untimed: the baseline is deterministic).
		var p, s1, sN sample
		if i == 0 {
			baseline()
		}
		if i%2 == 0 {
			sN = run(workers)
			p = baseline()
			s1 = run(1)
		} else {
			s1 = run(1)
			p = baseline()
			sN = run(workers)
		}
		b.Logf("iteration %d (accuracy %.4f): plain %v wall %v cpu | sim1 %v wall %v cpu | sim%d %v wall %v process cpu",
			i, acc, p.wall.Round(time.Millisecond), p.thread.Round(time.Millisecond),
			s1.wall.Round(time.Millisecond), s1.thread.Round(time.Millisecond),
			workers, sN.wall.Round(time.Millisecond), sN.proc.Round(time.Millisecond))
		plain.add(p)
		sim1.add(s1)
		simN.add(sN)
		cpu1 = append(cpu1, s1.thread.Seconds()/p.thread.Seconds())
		cpuN = append(cpuN, sN.proc.Seconds()/p.proc.Seconds())
		wall1 = append(wall1, s1.wall.Seconds()/p.wall.Seconds())
		wallN = append(wallN, sN.wall.Seconds()/p.wall.Seconds())
	}
	b.StopTimer()
	// Medians of the per-iteration ratios: a load change on the machine
	// skews one iteration, not the figure.
	b.ReportMetric(plain.wall.Seconds()/float64(b.N), "plain-s")
	b.ReportMetric(median(cpu1), "sim1-cpu-x")
	b.ReportMetric(median(wall1), "sim1-wall-x")
	b.ReportMetric(median(wallN), "simN-wall-x")
	b.ReportMetric(median(cpuN), "simN-cpu-x")
	// Cores each variant actually got (process CPU / wall): on a
	// saturated machine the scheduler's per-session fairness (autogroup)
	// gives two threads no more CPU than one, and simN-wall-x cannot drop
	// below simN-cpu-x.
	b.ReportMetric(plain.proc.Seconds()/plain.wall.Seconds(), "plain-cores")
	b.ReportMetric(simN.proc.Seconds()/simN.wall.Seconds(), "simN-cores")
	if l, err := os.ReadFile("/proc/loadavg"); err == nil {
		b.Logf("GOMAXPROCS %d, load average %s", workers, string(l[:len(l)-1]))
	}
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func (s *sample) add(o sample) {
	s.wall += o.wall
	s.thread += o.thread
	s.proc += o.proc
}

// BenchmarkSessionCores measures how many cores this process gets with
// one and with two busy goroutines (1 s each, alternating, process CPU /
// wall): if two goroutines get no more than one, the machine is
// saturated and the scheduler's per-session share caps any parallel
// speed-up, so BenchmarkTable1's simN-wall-x can only show the CPU ratio.
//
//	go test -run '^$' -bench SessionCores -benchtime 3x ./sim
func BenchmarkSessionCores(b *testing.B) {
	burn := func(n int) float64 {
		var sink atomic.Uint64
		s := timed(false, func() {
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					t0 := time.Now()
					x := uint64(0)
					for time.Since(t0) < time.Second {
						for j := range uint64(100000) {
							x += j * j
						}
					}
					sink.Add(x)
				})
			}
			wg.Wait()
		})
		return s.proc.Seconds() / s.wall.Seconds()
	}
	var one, two []float64
	for i := 0; i < b.N; i++ {
		one = append(one, burn(1))
		two = append(two, burn(2))
	}
	b.ReportMetric(median(one), "cores-1-goroutine")
	b.ReportMetric(median(two), "cores-2-goroutines")
}
