package local_test

import (
	"fmt"

	"browserfl/shared/dataset"
	"browserfl/wasm/local"
)

// A drawing read from the canvas becomes a sample, the page stores its
// sources as IDX arrays, and picked IDX files parse back to the same
// samples.
func Example() {
	rgba := make([]byte, local.Side*local.Side*4) // a black 28x28 canvas
	for y := 4; y < 24; y++ {                     // a vertical white stroke
		rgba[4*(y*local.Side+14)] = 255
	}
	x, err := local.FromRGBA(rgba, local.Side, local.Side)
	if err != nil {
		panic(err)
	}
	drawn := local.Empty("drawn")
	drawn.Samples = append(drawn.Samples, dataset.Sample{X: x, Label: 1})

	images, labels, err := local.Encode(drawn)
	if err != nil {
		panic(err)
	}
	res, err := local.Parse([]local.File{{Name: "my-images", Data: images}, {Name: "my-labels", Data: labels}})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(res.Set.Samples), res.Set.Samples[0].Label, res.Set.Samples[0].X[10*local.Side+14], res.Summary)
	// Output:
	// 1 1 1 [my-images + my-labels (1 samples)]
}
