package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"browserfl/internal/sessionflag"
	"browserfl/shared/dataset"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
	"browserfl/sim"
)

// options are flattack's flags, checked.
type options struct {
	seeds   int
	ks      []int
	kinds   []string
	dataDir string
	cap     float64
	// p is the session: the classroom's, with -signal-bound's assumed
	// signal bound D (0: none).
	p optim.Params
	// partition splits the training set over the devices.
	partition dataset.Scheme
	// compare also runs each cell with the norm bound only.
	compare bool
}

func parse(args []string, stderr io.Writer) (options, error) {
	o := options{p: optim.Params{Algorithm: "nc", Model: "logreg", M: 10, Cohort: 10, Rounds: 100, Batch: 32, Clip: 1, Eta: 0.02, Rho: 1.5}}
	fs := flag.NewFlagSet("flattack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sessionflag.Register(fs, &o.p, "signal-bound", "algorithm", "T", "threshold")
	fs.IntVar(&o.seeds, "seeds", 3, "seeds per cell (1, 2, ...)")
	// -K is flattack's own: hostile devices, not local's steps K.
	ks := fs.String("K", "0,1,2,3", "hostile devices per session, comma-separated")
	kinds := fs.String("kinds", strings.Join(sim.AttackKinds, ","), "attack kinds, comma-separated")
	fs.StringVar(&o.dataDir, "data-dir", dataset.DefaultFashionMNISTDir, "Fashion-MNIST directory")
	fs.Float64Var(&o.cap, "attack-cap", 0, "cap each hostile message's norm (0 = as large as the tests allow)")
	part := fs.String("partition", dataset.SchemeIID, "how the training set is split: iid, shards[:k], dirichlet:alpha")
	fs.BoolVar(&o.compare, "compare", true, "also run each cell with the norm bound only")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	if o.partition, err = dataset.ParseScheme(*part); err != nil {
		return o, fmt.Errorf("-partition: %w", err)
	}
	if !(o.p.SignalBound >= 0) || math.IsInf(o.p.SignalBound, 0) {
		return o, fmt.Errorf("-signal-bound %v: want a finite value >= 0", o.p.SignalBound)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.seeds < 1 {
		return o, fmt.Errorf("-seeds %d: want >= 1", o.seeds)
	}
	if !(o.cap >= 0) || math.IsInf(o.cap, 0) {
		return o, fmt.Errorf("-attack-cap %v: want a finite value >= 0 (0: as large as the tests allow)", o.cap)
	}
	if _, err := algo.Lookup(o.p.Algorithm); err != nil {
		return o, fmt.Errorf("-algorithm: %w", err)
	}
	if !algo.Private(o.p) {
		o.p.Rho = 0 // the classroom's target, for the private algorithms only
	}
	if err := algo.Validate(o.p); err != nil {
		return o, err
	}
	for _, s := range strings.Split(*ks, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || k < 0 || k > 10 {
			return o, fmt.Errorf("-K %q: want counts between 0 and 10", *ks)
		}
		o.ks = append(o.ks, k)
	}
	for _, s := range strings.Split(*kinds, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(sim.AttackKinds, s) {
			return o, fmt.Errorf("-kinds: %q is not one of %v", s, sim.AttackKinds)
		}
		o.kinds = append(o.kinds, s)
	}
	return o, nil
}
