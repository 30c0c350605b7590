package main

import (
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"browserfl/shared/dataset"
	"browserfl/shared/model"
)

// TestEvaluationCompact: the evaluation of a picture task's compact test
// set, expanded evalBatch pictures at a time, gives model.Evaluate of its
// first n samples as float32, bit for bit (batches that divide n or not,
// one picture, the whole set), and Len says n.
func TestEvaluationCompact(t *testing.T) {
	const n, features, classes = 600, 16, 3
	rng := rand.New(rand.NewPCG(1, 2))
	pix, lab := make([]byte, n*features), make([]byte, n)
	for i := range pix {
		pix[i] = byte(rng.IntN(256))
	}
	for i := range lab {
		lab[i] = byte(rng.IntN(classes))
	}
	c, err := dataset.NewCompact("test", &dataset.IDX{Type: dataset.Uint8, Dims: []int{n, 4, 4}, Data: pix},
		&dataset.IDX{Type: dataset.Uint8, Dims: []int{n}, Data: lab}, classes)
	if err != nil {
		t.Fatal(err)
	}
	m := model.NewLogReg(features, classes)
	w := make([]float64, m.Dim())
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	for _, k := range []int{1, evalBatch, evalBatch + 1, 2 * evalBatch, n} {
		head, err := c.Head(k)
		if err != nil {
			t.Fatal(err)
		}
		wantAcc, wantLoss := model.Evaluate(m, w, head.Samples)
		e := &evaluation{pics: c, n: k}
		acc, loss, err := e.evaluate(m, w)
		if err != nil || acc != wantAcc || loss != wantLoss || e.Len() != k {
			t.Errorf("first %d: (%v, %v, %v), Len %d; want (%v, %v), Len %d", k, acc, loss, err, e.Len(), wantAcc, wantLoss, k)
		}
		held := &evaluation{samples: head.Samples}
		if acc, loss, err := held.evaluate(m, w); err != nil || acc != wantAcc || loss != wantLoss || held.Len() != k {
			t.Errorf("first %d held as samples: (%v, %v, %v)", k, acc, loss, err)
		}
	}
	if (*evaluation)(nil).Len() != 0 {
		t.Error("no evaluation set has samples")
	}
}

// TestEvalSetFashion: the default session's evaluation set is the test
// set's first -eval-samples pictures kept compact (on disk), and its
// evaluation of a model is model.Evaluate of those pictures as float32,
// bit for bit.
func TestEvalSetFashion(t *testing.T) {
	o, err := parse([]string{"-eval-samples", "600", "-data", t.TempDir()}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	td := fashionTask(t, o)
	defer td.close()
	a, err := assembleSession(o, td, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	e, err := evalSet(o, a, td, slog.New(slog.DiscardHandler))
	if err != nil || e.Len() != 600 || e.pics == nil || !e.pics.OnDisk() || e.samples != nil {
		t.Fatalf("evaluation set: %d samples, compact on disk %v, %d held; %v", e.Len(), e.pics != nil && e.pics.OnDisk(), len(e.samples), err)
	}
	head, err := td.test(600)
	if err != nil {
		t.Fatal(err)
	}
	w := make([]float64, a.mdl.Dim())
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range w {
		w[i] = 0.01 * rng.NormFloat64()
	}
	wantAcc, wantLoss := model.Evaluate(a.mdl, w, head.Samples)
	if acc, loss, err := e.evaluate(a.mdl.Clone(), w); err != nil || acc != wantAcc || loss != wantLoss {
		t.Errorf("evaluation = (%v, %v, %v), model.Evaluate of the first 600 (%v, %v)", acc, loss, err, wantAcc, wantLoss)
	}
}
