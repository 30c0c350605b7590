package plan_test

import (
	"fmt"

	"browserfl/shared/optim"
	"browserfl/shared/plan"
)

func ExampleCompute() {
	p := optim.Params{Algorithm: "nc", M: 30, Cohort: 10, Rounds: 100, Batch: 32, Clip: 1, Eta: 0.1, Epsilon: 4, Delta: 1e-5}
	r, err := plan.Compute(p, p.Delta)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("device sigma at participation 1: %.4f\n", r.Noise[0].Sigma)
	fmt.Printf("worst case: %d releases, rho %.4f, epsilon %.3f at delta %g\n", r.WorstParticipations, r.WorstRho, r.WorstEpsilon, r.Delta)
	// Output:
	// device sigma at participation 1: 0.1539
	// worst case: 100 releases, rho 0.4277, epsilon 4.000 at delta 1e-05
}
