package optim

// SumVectors sets sum to the element-wise sum of vs, added in the order
// given: sum[i] = ((0 + vs[0][i]) + vs[1][i]) + ... for every i, the
// same bits as adding the vectors one after another into a cleared sum
// (the order Apply adds a round's updates in). It adds four vectors per
// pass, so sum is loaded and stored once per four additions. Every
// vector must have len(sum) elements.
func SumVectors(sum []float64, vs [][]float64) {
	clear(sum)
	for len(vs) >= 4 {
		a, b, c, d := vs[0][:len(sum)], vs[1][:len(sum)], vs[2][:len(sum)], vs[3][:len(sum)]
		for i, s := range sum {
			s += a[i]
			s += b[i]
			s += c[i]
			s += d[i]
			sum[i] = s
		}
		vs = vs[4:]
	}
	for _, v := range vs {
		v = v[:len(sum)]
		for i := range sum {
			sum[i] += v[i]
		}
	}
}
