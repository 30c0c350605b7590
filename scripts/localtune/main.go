//go:build ignore

// Command localtune measures private local training ("local") against the
// one-step algorithms ("nc", "noisysgd") after a few rounds at the same
// per-device (epsilon, delta), Fashion-MNIST logistic regression, M = 100,
// m = 50 (docs/results-notes.md, "Private local training").
//
// Tuning never sees the test set: with -phase tune the last 10,000 of the
// 60,000 training images are held out as a validation split, every
// configuration of the grid trains on the first 50,000 and is scored on
// the validation split, and the best configuration per algorithm is
// printed. With -phase test the configurations given by -configs (the
// tuned ones) train on all 60,000 and are scored once on the test set,
// for each seed. Both phases run the simulator (package sim), i.e. the
// product's own algorithm halves, cohort rule and minibatch rule.
//
//	go run scripts/localtune/main.go -phase tune
//	go run scripts/localtune/main.go -phase tune -configs 'local:b=100,K=2,eta=1;...'
//	go run scripts/localtune/main.go -phase test -configs 'local:b=50,K=10,eta=1;noisysgd:b=50,eta=1'
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"strconv"
	"strings"

	"browserfl/shared/dataset"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/sim"
)

type config struct {
	alg     string
	b, k, e int // e: local passes E (0: one)
	eta     float64
	model   string // "" = logreg; logreg-unit runs with S = 2 (nothing clipped)
}

func (c config) String() string {
	s := fmt.Sprintf("%s:b=%d", c.alg, c.b)
	if c.alg == "local" {
		s += fmt.Sprintf(",K=%d", c.k)
		if c.e > 1 {
			s += fmt.Sprintf(",E=%d", c.e)
		}
	}
	s += fmt.Sprintf(",eta=%g", c.eta)
	if c.model != "" {
		s += ",model=" + c.model
	}
	return s
}

// family groups the configurations compared in the tune phase: the
// algorithm, and for "local" whether it takes several passes.
func (c config) family() string {
	if c.e > 1 {
		return c.alg + "-passes"
	}
	return c.alg
}

func parseConfig(s string) (config, error) {
	alg, rest, ok := strings.Cut(s, ":")
	if !ok {
		return config{}, fmt.Errorf("config %q: want alg:b=..,K=..,eta=..", s)
	}
	c := config{alg: alg}
	for _, kv := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "b":
			c.b, err = strconv.Atoi(v)
		case "K":
			c.k, err = strconv.Atoi(v)
		case "E":
			c.e, err = strconv.Atoi(v)
		case "model":
			c.model = v
		case "eta":
			c.eta, err = strconv.ParseFloat(v, 64)
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return config{}, fmt.Errorf("config %q: %w", s, err)
		}
	}
	return c, nil
}

func grid() []config {
	var out []config
	for _, b := range []int{1, 10, 50} {
		for _, eta := range []float64{0.1, 0.3, 1, 3} {
			out = append(out, config{alg: "noisysgd", b: b, eta: eta})
		}
	}
	for _, b := range []int{1, 10} {
		for _, eta := range []float64{0.03, 0.1, 0.3, 1} {
			out = append(out, config{alg: "nc", b: b, eta: eta})
		}
	}
	for _, bk := range [][2]int{{10, 5}, {10, 10}, {50, 5}, {50, 10}, {50, 25}} {
		for _, eta := range []float64{0.1, 0.3, 1} {
			out = append(out, config{alg: "local", b: bk[0], k: bk[1], eta: eta})
		}
	}
	return out
}

func run(c config, train, test dataset.Set, rounds int, eps float64, seed uint64, evalEvery int) (sim.Result, error) {
	p := optim.Params{Algorithm: c.alg, Model: "logreg", M: 100, Cohort: 50, Rounds: rounds, Batch: c.b,
		Clip: 1, Eta: c.eta, Epsilon: eps, Delta: 1e-5}
	if c.model != "" {
		p.Model = c.model
	}
	if G, _, ok := model.Convexity(p.Model); ok {
		p.Clip = G // the certified gradient bound: nothing is clipped
	}
	if c.alg == "local" {
		p.LocalSteps, p.LocalEpochs = c.k, c.e
	}
	return sim.Run(context.Background(), sim.Config{Params: p, Train: train, Test: test,
		Partition: dataset.Scheme{Kind: dataset.SchemeIID}, Seed: seed, EvalEvery: evalEvery})
}

func main() {
	phase := flag.String("phase", "tune", "tune (validation split) or test (test set, -configs)")
	configs := flag.String("configs", "", "configurations separated by ';' (alg:b=..,K=..,eta=..): the test phase's, or the tune phase's instead of the built-in grid")
	rounds := flag.Int("T", 10, "rounds")
	eps := flag.Float64("epsilon", 8, "epsilon per device at delta = 1e-5")
	seeds := flag.Int("seeds", 3, "test phase: seeds 1..n")
	only := flag.String("only", "", "tune phase: only this algorithm")
	flag.Parse()
	train, test, err := dataset.LoadFashionMNIST(dataset.DefaultFashionMNISTDir)
	if err != nil {
		log.Fatal(err)
	}
	switch *phase {
	case "tune":
		fit, err := train.Take(50000)
		if err != nil {
			log.Fatal(err)
		}
		val := dataset.Set{Name: "fashion-mnist validation (train[50000:])", Features: train.Features,
			Classes: train.Classes, Samples: train.Samples[50000:]}
		best := map[string]config{}
		bestAcc := map[string]float64{}
		cs := grid()
		if *configs != "" {
			cs = nil
			for _, s := range strings.Split(*configs, ";") {
				c, err := parseConfig(strings.TrimSpace(s))
				if err != nil {
					log.Fatal(err)
				}
				cs = append(cs, c)
			}
		}
		for _, c := range cs {
			if *only != "" && c.alg != *only {
				continue
			}
			res, err := run(c, fit, val, *rounds, *eps, 1, *rounds)
			if err != nil {
				log.Fatalf("%v: %v", c, err)
			}
			fmt.Printf("tune %-28s validation accuracy %.4f after %d rounds\n", c, res.FinalAccuracy, res.Rounds)
			if f := c.family(); res.FinalAccuracy > bestAcc[f] {
				best[f], bestAcc[f] = c, res.FinalAccuracy
			}
		}
		algs := make([]string, 0, len(best))
		for a := range best {
			algs = append(algs, a)
		}
		sort.Strings(algs)
		for _, a := range algs {
			fmt.Printf("best %-28s validation accuracy %.4f\n", best[a], bestAcc[a])
		}
	case "test":
		for _, s := range strings.Split(*configs, ";") {
			c, err := parseConfig(strings.TrimSpace(s))
			if err != nil {
				log.Fatal(err)
			}
			for seed := 1; seed <= *seeds; seed++ {
				res, err := run(c, train, test, *rounds, *eps, uint64(seed), 1)
				if err != nil {
					log.Fatalf("%v: %v", c, err)
				}
				var curve []string
				for _, r := range res.Records {
					curve = append(curve, fmt.Sprintf("%.4f", r.Accuracy))
				}
				last := res.Records[len(res.Records)-1]
				fmt.Printf("test %-28s seed %d: test accuracy %.4f after %d rounds, uplink %d bytes, max eps %.3f; by round: %s\n",
					c, seed, res.FinalAccuracy, res.Rounds, last.CumUplinkBytes, last.MaxEpsilon, strings.Join(curve, " "))
			}
		}
	default:
		fmt.Fprintln(os.Stderr, "-phase: tune or test")
		os.Exit(2)
	}
}
