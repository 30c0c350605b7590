package wire_test

import (
	"fmt"

	"browserfl/shared/wire"
)

func Example() {
	// The coordinator assigns round 4 with x_t and x_{t-1}.
	b, err := wire.EncodeRound(wire.RoundFrame{T: 4, DeadlineMillis: 2000, X: []float64{0.5, -1}, XPrev: []float64{0, 0}})
	if err != nil {
		panic(err)
	}
	// The device checks it against the session's dimension.
	r, err := wire.DecodeRound(b, wire.Limits{Dim: 2})
	fmt.Println(len(b), r.T, r.X, r.XPrev, err)

	// Control messages are JSON text frames.
	c, _ := wire.EncodeControl(wire.Decision{T: 4, State: wire.Included})
	fmt.Println(string(c))
	// Output:
	// 33 4 [0.5 -1] [0 0] <nil>
	// {"type":"decision","body":{"t":4,"state":"included"}}
}
