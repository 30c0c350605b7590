package optim_test

import (
	"crypto/rand"
	"fmt"

	"browserfl/shared/dataset"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
)

func Example() {
	p := optim.Params{
		Algorithm: "nc", Model: "logreg", Features: 2, Classes: 2,
		M: 3, Cohort: 2, Rounds: 10, Batch: 1,
		Clip: 1, Eta: 0.1, Diameter: 10, Rho: 8,
		Compressor: "ef+randk:0.5",
	}
	m, err := model.New(p.Model, p.Features, p.Classes)
	if err != nil {
		panic(err)
	}
	srv, err := optim.NewServer(p, make([]float64, m.Dim()), rand.Reader)
	if err != nil {
		panic(err)
	}
	devs := make([]optim.Device, p.M)
	for i := range devs {
		if devs[i], err = optim.NewDevice(p, m.Clone(), rand.Reader); err != nil {
			panic(err)
		}
	}
	sample := []dataset.Sample{{X: []float32{1, 0}, Label: 1}}
	for t := 1; t <= p.Rounds; t++ {
		r := srv.Next()
		cohort := []int{t % 3, (t + 1) % 3}
		var ups []optim.Update
		for _, i := range cohort {
			u, err := devs[i].Prepare(r, sample)
			if err != nil {
				panic(err)
			}
			ups = append(ups, u)
		}
		if err := srv.Apply(r.T, ups); err != nil {
			panic(err)
		}
		for _, i := range cohort {
			devs[i].Commit(r.T)
		}
	}
	spent := devs[0].(optim.Accountant).Ledger()
	budget, _ := algo.ZCDPBudget(p)
	fmt.Println(len(srv.Model()), spent.Rho() <= budget)
	// Output: 6 true
}
