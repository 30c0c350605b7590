package model_test

import (
	"fmt"

	"browserfl/shared/dataset"
	"browserfl/shared/model"
)

// Train logistic regression on four 2-pixel images by plain gradient
// descent, one sample at a time, and evaluate it.
func Example() {
	samples := []dataset.Sample{
		{X: []float32{1, 0}, Label: 0},
		{X: []float32{0.9, 0.2}, Label: 0},
		{X: []float32{0, 1}, Label: 1},
		{X: []float32{0.1, 0.8}, Label: 1},
	}
	m, err := model.New("logreg", 2, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	w := make([]float64, m.Dim())
	model.Init(m, w, 1)
	acc, loss := model.Evaluate(m, w, samples)
	fmt.Printf("before: accuracy %.2f, loss %.3f\n", acc, loss)

	g := make([]float64, m.Dim())
	for epoch := 0; epoch < 50; epoch++ {
		for _, s := range samples {
			m.Grad(g, w, s)
			for i := range w {
				w[i] -= 0.5 * g[i]
			}
		}
	}
	acc, loss = model.Evaluate(m, w, samples)
	fmt.Printf("after:  accuracy %.2f, loss below 0.1: %v\n", acc, loss < 0.1)
	fmt.Println("class of (0.2, 0.9):", m.Predict(w, []float32{0.2, 0.9}))
	// Output:
	// before: accuracy 0.50, loss 0.693
	// after:  accuracy 1.00, loss below 0.1: true
	// class of (0.2, 0.9): 1
}

// The mu^2-SGD device correction s = alpha_t grad f(x_t; z) -
// alpha_{t-1} grad f(x_{t-1}; z) in one call.
func ExampleGradDiff() {
	m, _ := model.New("mlp", 784, 10)
	xt := make([]float64, m.Dim())
	xPrev := make([]float64, m.Dim())
	model.Init(m, xt, 1)
	model.Init(m, xPrev, 2)
	z := dataset.Sample{X: make([]float32, 784), Label: 3}
	z.X[400] = 1

	t := 5.0
	s := make([]float64, m.Dim())
	lossT, lossPrev := model.GradDiff(m, s, t, xt, t-1, xPrev, z)
	fmt.Println("d =", len(s))
	fmt.Printf("losses at x_t and x_{t-1}: %.1f %.1f\n", lossT, lossPrev)
	// Output:
	// d = 50890
	// losses at x_t and x_{t-1}: 3.1 3.2
}

func ExampleNew() {
	for _, name := range []string{"logreg", "mlp", "cnn"} {
		m, err := model.New(name, 784, 10)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(m.Name(), m.Dim())
	}
	// Output:
	// logreg 7850
	// mlp 50890
	// model: unknown model "cnn" (valid: ["logreg" "mlp" "logreg-unit"])
}
