package model

import "math"

// softmaxCE turns the logits z into dz = softmax(z) - onehot(label) in place
// and returns the cross-entropy loss lse(z) - z[label]. A negative label only
// turns z into probabilities and returns 0.
//
// With k the index of the largest logit m and r = sum_{c != k} exp(z_c - m),
// lse(z) = m + log1p(r), so the loss is (m - z[label]) + log1p(r): both terms
// are non-negative and neither is a difference of nearly equal numbers, so a
// confident correct prediction gets an accurate tiny loss instead of a
// rounded 0, and huge finite logits give finite results. For the same reason
// p_k - 1 is written as -r/(1+r) when label == k.
func softmaxCE(z []float64, label int) float64 {
	k := argmax(z)
	m := z[k]
	gap := 0.0
	if label >= 0 {
		gap = m - z[label]
	}
	r := 0.0
	for c, v := range z {
		if c == k {
			continue
		}
		e := math.Exp(v - m)
		z[c] = e
		r += e
	}
	inv := 1 / (1 + r)
	for c := range z {
		z[c] *= inv
	}
	z[k] = inv
	if label < 0 {
		return 0
	}
	if label == k {
		z[k] = -r * inv
	} else {
		z[label] -= 1
	}
	return gap + math.Log1p(r)
}

// argmax returns the index of the largest element, the smallest such index
// on ties. NaN elements are never chosen unless all are NaN (then 0).
func argmax(z []float64) int {
	k := 0
	for c := 1; c < len(z); c++ {
		if z[c] > z[k] || (z[k] != z[k] && z[c] == z[c]) {
			k = c
		}
	}
	return k
}

// sigmoid is the logistic function, evaluated without overflow: exp is only
// ever taken of a non-positive number.
func sigmoid(a float64) float64 {
	if a >= 0 {
		return 1 / (1 + math.Exp(-a))
	}
	e := math.Exp(a)
	return e / (1 + e)
}

// input is a sample's features in float64, densely (x) and as the list of
// its non-zero entries (idx, val), converted once per sample.
type input struct {
	x   []float64
	idx []int32
	val []float64
}

func newInput(features int) input {
	return input{
		x:   make([]float64, features),
		idx: make([]int32, 0, features),
		val: make([]float64, 0, features),
	}
}

// load converts x into in and reports whether the sparse form should be
// used: when at most half the features are non-zero, the gather over the
// non-zeros plus a clear of the gradient rows is cheaper than the dense
// loops (BenchmarkGrad at density 0.19 and 0.5 measures both sides).
func (in *input) load(x []float32) (sparse bool) {
	xs := in.x[:len(x)]
	idx := in.idx[:len(x)]
	val := in.val[:len(x)]
	n := 0
	for i, v := range x {
		f := float64(v)
		xs[i] = f
		// Written unconditionally and kept only if non-zero, so the loop
		// has no data-dependent branch (random sparsity patterns would
		// otherwise cost a misprediction every few features).
		idx[n] = int32(i)
		val[n] = f
		if v != 0 {
			n++
		}
	}
	in.idx = idx[:n]
	in.val = val[:n]
	return 2*n <= len(x)
}

// dot returns sum_i a[i]*b[i] over len(b) terms, with four partial sums.
func dot(a, b []float64) float64 {
	a = a[:len(b)]
	var s0, s1, s2, s3 float64
	for len(b) >= 4 {
		a4, b4 := a[:4:4], b[:4:4]
		s0 += a4[0] * b4[0]
		s1 += a4[1] * b4[1]
		s2 += a4[2] * b4[2]
		s3 += a4[3] * b4[3]
		a, b = a[4:], b[4:]
	}
	for i, v := range b {
		s0 += a[i] * v
	}
	return (s0 + s1) + (s2 + s3)
}

// gather returns sum_k a[idx[k]]*val[k], with four partial sums.
func gather(a []float64, idx []int32, val []float64) float64 {
	val = val[:len(idx)]
	var s0, s1, s2, s3 float64
	for len(idx) >= 4 {
		i4, v4 := idx[:4:4], val[:4:4]
		s0 += a[i4[0]] * v4[0]
		s1 += a[i4[1]] * v4[1]
		s2 += a[i4[2]] * v4[2]
		s3 += a[i4[3]] * v4[3]
		idx, val = idx[4:], val[4:]
	}
	for k, i := range idx {
		s0 += a[i] * val[k]
	}
	return (s0 + s1) + (s2 + s3)
}

// scaleTo writes dst[i] = g*x[i] for i < len(x).
func scaleTo(dst []float64, g float64, x []float64) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = g * v
	}
}

// scatter writes dst = 0 except dst[idx[k]] = g*val[k].
func scatter(dst []float64, g float64, idx []int32, val []float64) {
	clear(dst)
	val = val[:len(idx)]
	for k, i := range idx {
		dst[i] = g * val[k]
	}
}

// row writes the gradient row g*x (dense or sparse) into dst.
func (in *input) row(dst []float64, g float64, sparse bool) {
	if sparse {
		scatter(dst[:len(in.x)], g, in.idx, in.val)
	} else {
		scaleTo(dst, g, in.x)
	}
}

// rows writes out[r] = w[r*stride : r*stride+F] · x for r < len(out), with
// F = len(in.x). Dense inputs, and sparse ones where the platform's dense
// kernel is faster (denseKernels), go to gemvRows; otherwise rows go four
// at a time over the non-zeros so that each index and value is loaded once
// per four rows and the four sums are independent dependency chains.
func (in *input) rows(out, w []float64, stride int, sparse bool) {
	if !sparse || denseKernels(len(in.idx), len(in.x)) {
		gemvRows(out, w, stride, in.x)
		return
	}
	F := len(in.x)
	r := 0
	for ; r+4 <= len(out); r += 4 {
		o := r * stride
		out[r], out[r+1], out[r+2], out[r+3] = in.gather4(w[o:o+F], w[o+stride:o+stride+F], w[o+2*stride:o+2*stride+F], w[o+3*stride:o+3*stride+F])
	}
	for ; r < len(out); r++ {
		o := r * stride
		out[r] = gather(w[o:o+F], in.idx, in.val)
	}
}

// rowsPair is rows for two weight matrices of the same shape at once (the
// two points of a gradient difference): the four-row blocks of each, then
// their leftover rows four at a time across both matrices, so that with 10
// classes no row goes through the one-row gather.
func (in *input) rowsPair(za, wa, zb, wb []float64, stride int, sparse bool) {
	if !sparse || denseKernels(len(in.idx), len(in.x)) {
		gemvRows(za, wa, stride, in.x)
		gemvRows(zb, wb, stride, in.x)
		return
	}
	na, nb := len(za)&^3, len(zb)&^3
	in.rows(za[:na], wa, stride, true)
	in.rows(zb[:nb], wb, stride, true)
	F := len(in.x)
	var out [6]*float64
	var rs [6][]float64
	n := 0
	for r := na; r < len(za); r++ {
		out[n], rs[n] = &za[r], wa[r*stride:r*stride+F]
		n++
	}
	for r := nb; r < len(zb); r++ {
		out[n], rs[n] = &zb[r], wb[r*stride:r*stride+F]
		n++
	}
	k := 0
	for ; k+4 <= n; k += 4 {
		*out[k], *out[k+1], *out[k+2], *out[k+3] = in.gather4(rs[k], rs[k+1], rs[k+2], rs[k+3])
	}
	for ; k < n; k++ {
		*out[k] = gather(rs[k], in.idx, in.val)
	}
}

// gather4 returns the dot products of the four rows (each of length
// len(in.x)) with the loaded input's non-zeros.
func (in *input) gather4(r0, r1, r2, r3 []float64) (s0, s1, s2, s3 float64) {
	F := len(r0)
	r1, r2, r3 = r1[:F], r2[:F], r3[:F]
	val := in.val
	idx := in.idx[:len(val)]
	for k, i := range idx {
		// One comparison covers the four rows' bounds checks (the
		// compiler proves the rest), which matters in WebAssembly.
		c := int(uint32(i))
		if c >= F {
			panic("model: feature index out of range")
		}
		v := val[k]
		s0 += r0[c] * v
		s1 += r1[c] * v
		s2 += r2[c] * v
		s3 += r3[c] * v
	}
	return
}

// gemvRowsHand writes out[r] = w[r*stride : r*stride+len(x)] · x, four
// rows at a time (each x[i] loaded once per four rows, four independent
// sums). It is gemvRows where gonum has no assembly (kernel_other.go) and
// the reference the tests compare gonum's kernel with.
func gemvRowsHand(out, w []float64, stride int, x []float64) {
	F := len(x)
	r := 0
	for ; r+4 <= len(out); r += 4 {
		o := r * stride
		r0, r1, r2, r3 := w[o:o+F], w[o+stride:o+stride+F], w[o+2*stride:o+2*stride+F], w[o+3*stride:o+3*stride+F]
		var s0, s1, s2, s3 float64
		for i, v := range x {
			s0 += r0[i] * v
			s1 += r1[i] * v
			s2 += r2[i] * v
			s3 += r3[i] * v
		}
		out[r], out[r+1], out[r+2], out[r+3] = s0, s1, s2, s3
	}
	for ; r < len(out); r++ {
		o := r * stride
		out[r] = dot(w[o:o+F], x)
	}
}

// gerRowsHand adds alpha g[r] x to dst[r*stride : r*stride+len(x)] for
// r < len(g): the rank-one update, by hand (see gemvRowsHand).
func gerRowsHand(dst []float64, stride int, alpha float64, g, x []float64) {
	F := len(x)
	for r, gr := range g {
		axpy(dst[r*stride:r*stride+F], alpha*gr, x)
	}
}

// sumSquares returns ||x||^2 of the loaded input (four partial sums; the
// features are float32, so no square or sum of 2^31 of them overflows).
func (in *input) sumSquares(sparse bool) float64 {
	v := in.x
	if sparse {
		v = in.val
	}
	var s0, s1, s2, s3 float64
	for len(v) >= 4 {
		x := v[:4:4]
		s0 += x[0] * x[0]
		s1 += x[1] * x[1]
		s2 += x[2] * x[2]
		s3 += x[3] * x[3]
		v = v[4:]
	}
	for _, x := range v {
		s0 += x * x
	}
	return (s0 + s1) + (s2 + s3)
}

// addRows adds alpha g[r] x to dst[r*stride : r*stride+F] for r < len(g),
// F = len(in.x): the rank-one update of a factored gradient, over the
// non-zeros when the input is sparse and the platform's dense kernel is
// not faster (denseKernels), with gerRows otherwise.
func (in *input) addRows(dst []float64, stride int, alpha float64, g []float64, sparse bool) {
	if !sparse || denseKernels(len(in.idx), len(in.x)) {
		gerRows(dst, stride, alpha, g, in.x)
		return
	}
	F := len(in.x)
	val := in.val
	idx := in.idx[:len(val)]
	r := 0
	for ; r+4 <= len(g); r += 4 {
		o := r * stride
		d0 := dst[o : o+F]
		d1 := dst[o+stride : o+stride+F][:F]
		d2 := dst[o+2*stride : o+2*stride+F][:F]
		d3 := dst[o+3*stride : o+3*stride+F][:F]
		k0, k1, k2, k3 := alpha*g[r], alpha*g[r+1], alpha*g[r+2], alpha*g[r+3]
		for j, i := range idx {
			c := int(uint32(i)) // one comparison for the four rows, as in gather4
			if c >= F {
				panic("model: feature index out of range")
			}
			v := val[j]
			d0[c] += k0 * v
			d1[c] += k1 * v
			d2[c] += k2 * v
			d3[c] += k3 * v
		}
	}
	for ; r < len(g); r++ {
		d := dst[r*stride : r*stride+F]
		k := alpha * g[r]
		for j, i := range idx {
			d[i] += k * val[j]
		}
	}
}

// axpy adds k*x[i] to dst[i] for i < len(x), four at a time.
func axpy(dst []float64, k float64, x []float64) {
	dst = dst[:len(x)]
	for len(x) >= 4 {
		d4, x4 := dst[:4:4], x[:4:4]
		d4[0] += k * x4[0]
		d4[1] += k * x4[1]
		d4[2] += k * x4[2]
		d4[3] += k * x4[3]
		dst, x = dst[4:], x[4:]
	}
	for i, v := range x {
		dst[i] += k * v
	}
}

// norm2 returns the Euclidean norm of a short vector: the square root of
// the plain sum of squares, or a scaled sum when that overflows or
// underflows. NaN or ±Inf in v give NaN or +Inf.
func norm2(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	if s < 1e300 && (s > 1e-300 || s == 0) {
		return math.Sqrt(s)
	}
	scale := 0.0
	for _, x := range v {
		scale = max(scale, math.Abs(x))
	}
	if scale == 0 || math.IsInf(scale, 0) || math.IsNaN(scale) {
		return s // 0, +Inf or NaN
	}
	s = 0
	for _, x := range v {
		s += (x / scale) * (x / scale)
	}
	return scale * math.Sqrt(s)
}
