package device_test

import (
	"errors"
	"fmt"

	"browserfl/device"
	"browserfl/shared/wire"
)

// A device checks a session against its owner's budget before joining.
func ExampleCheckSession() {
	sess := wire.SessionParams{Name: "demo", Dim: 7850, DeadlineMillis: 20000, Algorithm: "nc", Model: "logreg",
		Features: 784, Classes: 10, M: 30, Cohort: 10, Rounds: 200, Batch: 32, Clip: 1, Eta: 0.05, RhoPaper: 4}
	// rho_p = 4 costs rho_p^2/2 = 8 in standard zCDP.
	fmt.Println(device.CheckSession(sess, 10, false, false))
	err := device.CheckSession(sess, 1, false, false)
	fmt.Println(errors.Is(err, device.ErrRefused))
	// Output:
	// <nil>
	// true
}
