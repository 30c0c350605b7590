package privacy_test

import (
	"fmt"

	"browserfl/shared/privacy"
)

// A device charges its ledger once per release and shows its budget spent.
func ExampleLedger() {
	var l privacy.Ledger
	// Three releases with replace-one sensitivity 2S/b = 2/32 and sigma 0.2.
	for i := 0; i < 3; i++ {
		if err := l.Charge(2.0/32, 0.2); err != nil {
			fmt.Println(err)
			return
		}
	}
	eps, _ := l.Epsilon(1e-5)
	fmt.Printf("%d releases, rho = %.5f, epsilon = %.3f at delta 1e-5\n", l.Releases(), l.Rho(), eps)
	// Output: 3 releases, rho = 0.14648, epsilon = 2.178 at delta 1e-5
}

// The papers' rho_p and standard zCDP rho.
func ExampleZCDPFromPaperRho() {
	fmt.Println(privacy.ZCDPFromPaperRho(2), privacy.PaperRhoFromZCDP(2))
	// Output: 2 2
}

// DP-SGD accounting with the subsampled-Gaussian RDP accountant.
func ExampleRDPAccountant() {
	acc, _ := privacy.NewRDPAccountant(nil)
	_ = acc.Compose(privacy.SubsampledGaussian{Rate: 256.0 / 60000, NoiseMultiplier: 1.1, Steps: 60 * 60000 / 256})
	eps, order, _ := acc.Epsilon(1e-5, privacy.ConversionBalle2020)
	fmt.Printf("epsilon = %.3f at order %g\n", eps, order)
	// Output: epsilon = 2.597 at order 8.1
}

// A-priori calibration from a target budget (proactive-DP, Theorem B.4).
func ExampleProactivePlan_TheoremB4() {
	r, err := privacy.ProactivePlan{Epsilon: 0.3, Delta: 1e-5, Records: 100000, Epochs: 6, Theta: 1}.TheoremB4()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("sigma %.3f, T >= %d rounds of mean sample size %.0f\n", r.Sigma, r.Rounds, r.MeanSample)
	// Output: sigma 8.874, T >= 513 rounds of mean sample size 1170
}

// The last-iterate bound for a device running local cyclic DP-SGD.
func ExampleLastIterate() {
	p := privacy.LastIterate{Records: 600, Batch: 20, Steps: 90, StepSize: 0.1, Clip: 1, Sigma: 0.05,
		CurvatureKnown: true, WeakConvexity: 0, UpperCurvature: 4}
	rho, err := p.ZCDP()
	if err != nil {
		fmt.Println(err)
		return
	}
	eps, _ := privacy.ZCDPToEpsilon(rho, 1e-5)
	fmt.Printf("rho = %.4f, epsilon = %.3f at delta 1e-5\n", rho, eps)
	// Output: rho = 0.0040, epsilon = 0.333 at delta 1e-5
}
