package main

import (
	"fmt"
	"io"
	"math"

	"browserfl/shared/privacy"
)

// printProactiveTables recomputes Tables 9-11 of the proactive-DP paper
// (theta = 1, delta = 1/N, the paper's sigma and k) next to the printed
// values, as a Markdown table for docs/privacy.md.
func printProactiveTables(w io.Writer) error {
	rows := []struct {
		name                   string
		N                      int
		sigma, k               float64
		pEps, pS, pSA, pF, pFA float64
	}{
		{"Table 9 (LIBSVM)", 10000, 19.29962, 5, 0.0497, 26, 198, 0.0105, 0.0533},
		{"Table 10 (MNIST)", 60000, 12.10881, 6, 0.1521, 288, 3042, 0.0389, 0.2097},
		{"Table 11 (CIFAR10)", 50000, 6.572, 7, 0.5253, 406, 7504, 0.1133, 0.8239},
	}
	fmt.Fprintln(w, "| table | N | sigma | k | eps_target paper / ours | gamma (ours) | s_max paper / ours (B.4) | s_asym paper / ours | f-DP eps at s_max: paper / ours at paper's s / ours at our s | f-DP eps at s_asym: paper / ours (k epochs) / ours (2k epochs) | RDP eps at our s_max |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		delta := 1 / float64(r.N)
		eps, err := privacy.ProactiveEpsilon(r.sigma, delta)
		if err != nil {
			return err
		}
		res, err := privacy.ProactivePlan{Epsilon: eps, Delta: delta, Records: r.N, Epochs: r.k, Theta: 1}.TheoremB4()
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		sAsym := r.k * float64(r.N) / res.AsymMinRounds
		fdp := func(s, epochs float64) (float64, error) {
			mu, err := privacy.UniformSubsampledGDP(s/float64(r.N), r.sigma, epochs*float64(r.N)/s)
			if err != nil {
				return 0, err
			}
			return privacy.GDPToEpsilon(mu, delta)
		}
		var f [5]float64
		for i, c := range [][2]float64{{r.pS, r.k}, {res.MeanSample, r.k}, {sAsym, r.k}, {sAsym, 2 * r.k}} {
			if f[i], err = fdp(c[0], c[1]); err != nil {
				return err
			}
		}
		rdp, err := privacy.SubsampledGaussianEpsilon(res.MeanSample/float64(r.N), r.sigma, res.Rounds, delta)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "| %s | %d | %g | %g | %.4f / %.4f | %.4f | %g / %.1f | %g / %.0f | %.4f / %.4f / %.4f | %.4f / %.4f / %.4f | %.4f |\n",
			r.name, r.N, r.sigma, r.k, r.pEps, eps, res.Gamma, r.pS, res.MeanSample, r.pSA, math.Floor(sAsym),
			r.pF, f[0], f[1], r.pFA, f[2], f[3], rdp)
	}
	return nil
}
