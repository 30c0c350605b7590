package main

import "fmt"

// summary is the mean accuracy in percent with the range over seeds.
func summary(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	lo, hi, sum := xs[0], xs[0], 0.0
	for _, x := range xs {
		lo, hi, sum = min(lo, x), max(hi, x), sum+x
	}
	if len(xs) == 1 {
		return fmt.Sprintf("%.1f%%", 100*sum)
	}
	return fmt.Sprintf("%.1f%% (%.1f-%.1f)", 100*sum/float64(len(xs)), 100*lo, 100*hi)
}
