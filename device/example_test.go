package device_test

import (
	"errors"
	"fmt"

	"browserfl/device"
	"browserfl/shared/plan"
	"browserfl/shared/wire"
)

// A device checks a session against its owner's budget, epsilon at the
// owner's delta, before joining.
func ExampleCheckSession() {
	sess := wire.SessionParams{Name: "demo", Dim: 7850, DeadlineMillis: 20000, Algorithm: "nc", Model: "logreg",
		Features: 784, Classes: 10, M: 30, Cohort: 10, Rounds: 200, Batch: 32, Clip: 1, Eta: 0.05, Epsilon: 7.92, Delta: 1e-5}
	// The zero Policy is the default budget, epsilon 8 at delta 1e-5.
	fmt.Println(device.CheckSession(sess, device.Policy{}))
	err := device.CheckSession(sess, device.Policy{Budget: plan.Budget{Epsilon: 4, Delta: 1e-5}})
	fmt.Println(errors.Is(err, device.ErrRefused))
	fmt.Println(err)
	// Output:
	// <nil>
	// true
	// device: refused: plan: over the owner's budget: this session may spend up to epsilon 7.92 at delta 1e-5, over the budget of 4
}
