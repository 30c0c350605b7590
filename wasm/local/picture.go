package local

import (
	"fmt"
	"math"

	"browserfl/shared/model"
)

// rows returns where a model keeps one Side x Side picture's worth of
// input weights per row: the offset of row r is r*stride, and there are n
// rows. Logistic regression (both forms) keeps class c's weights at
// c*(Features+1) (model.LogReg's layout: the weights, then the bias); the
// MLP keeps hidden unit j's input weights at j*Features (W1 first).
// perClass says whether row r is class r.
func rows(name string, classes, dim int) (stride, n int, perClass bool, err error) {
	switch name {
	case model.NameLogReg, model.NameUnitLogReg:
		if dim != classes*(Features+1) {
			break
		}
		return Features + 1, classes, true, nil
	case model.NameMLP:
		h := (dim - classes) / (Features + 1 + classes)
		if h < 1 || h*Features+h+classes*h+classes != dim {
			break
		}
		return Features, h, false, nil
	}
	return 0, 0, false, fmt.Errorf("local: no %dx%d pictures in a %q model of dimension %d", Side, Side, name, dim)
}

// UpdatePictures draws the same Side x Side slice of a release before
// the noise (clean) and as sent (sent): the row of input weights (one
// class's for logistic regression, one hidden unit's for the MLP) whose
// clean values moved most, each drawn by Picture. It returns that row,
// whether the row is a class (the row is then the class index), and the
// two pictures.
func UpdatePictures(name string, classes int, clean, sent []float64) (row int, perClass bool, cleanPic, sentPic []byte, err error) {
	if len(clean) != len(sent) {
		return 0, false, nil, nil, fmt.Errorf("local: clean has %d values, sent %d", len(clean), len(sent))
	}
	stride, n, perClass, err := rows(name, classes, len(clean))
	if err != nil {
		return 0, false, nil, nil, err
	}
	best := -1.0
	for r := range n {
		s := 0.0
		for _, v := range clean[r*stride : r*stride+Features] {
			s += v * v
		}
		if s > best {
			row, best = r, s
		}
	}
	off := row * stride
	return row, perClass, Picture(clean[off : off+Features]), Picture(sent[off : off+Features]), nil
}

// Picture draws Side*Side values as grey levels, each scaled by the
// largest magnitude among them: 128 is zero, 255 the largest positive
// value, 1 the largest negative (128 + 127 v / max|v|, rounded). All
// zeros (or a non-finite value anywhere) draw a plain 128.
func Picture(v []float64) []byte {
	out := make([]byte, len(v))
	top := 0.0
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			top = 0
			break
		}
		top = math.Max(top, math.Abs(x))
	}
	for i, x := range v {
		if top == 0 {
			out[i] = 128
			continue
		}
		out[i] = byte(math.Round(128 + 127*x/top))
	}
	return out
}
