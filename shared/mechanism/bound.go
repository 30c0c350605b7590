package mechanism

import "math"

// NormFactor returns F such that every message a device sends with this
// spec, decoded, has L2 norm at most F*X, when every vector the device
// hands to the compressor (before error feedback adds its residual) has
// L2 norm at most X, over at most steps messages. It is deterministic: it
// holds for every outcome of the compressor's randomness. It returns
// +Inf when no useful bound holds (the caller then checks finiteness
// only). The coordinator turns it into its update validation bound (see
// plausible.UpdateBound); the derivation of each case is in the comments.
//
// Without error feedback, one message is C(x):
//
//	dense float64           ||C(x)|| = ||x||
//	dense float32           each coordinate rounded to nearest: <= (1 + 2^-24) ||x||
//	randk (scaled by d/k)   <= (d/k) ||x||
//	topk                    <= ||x|| (a subset of the coordinates)
//	quant, qinf (S levels)  |C(x)_i| <= |x_i| + r/S with r <= ||x||_2 (2-norm
//	                        scale rounded up to float32) or r = ||x||_inf, so
//	                        <= (1 + sqrt(d)/S) (1 + 2^-23) ||x||
//
// With error feedback the device compresses z_t = x_t + e_{t-1} scaled by
// EFScale, and keeps e_t = z_t - C(scale z_t). If ||e_t|| <= c ||z_t||
// then ||z_t|| <= X (1 + c + ... + c^(t-1)), and the message is at most
// a * scale * ||z_t||. The residual factors c are: topk sqrt(1 - k/d)
// (the dropped coordinates are the smallest); randk 1 (EFScale makes it
// unscaled random-k, which drops up to all but k coordinates); dense
// float32 2^-24; quant with EFScale 1 (S^2 > d) sqrt(d)/S. For qinf with
// EFScale 1 (S >= 2) the infinity-norm argument of ErrorFeedback's doc
// gives ||e||_inf <= X/(S-1), so ||z|| <= X (1 + sqrt(d)/(S-1)) and the
// message is at most X (1 + 2 sqrt(d)/(S-1)) (1 + 2^-23).
func (s Spec) NormFactor(d, steps int) float64 {
	if d < 1 || steps < 1 || s.C == nil {
		return math.Inf(1)
	}
	fd := float64(d)
	const f32 = 1 + 1.0/(1<<23) // float32 rounding (to nearest or up), with margin
	var a, c float64            // one-shot factor, residual factor
	switch q := s.C.(type) {
	case Dense64:
		a, c = 1, 0
	case Dense32:
		a, c = f32, 1.0/(1<<23)
	case RandK:
		k := float64(fracK(q.Frac, q.K, d))
		a, c = fd/k, 1
	case TopK:
		k := float64(fracK(q.Frac, q.K, d))
		a, c = 1, math.Sqrt(1-k/fd)
	case Quant:
		if q.S < 1 {
			return math.Inf(1)
		}
		S := float64(q.S)
		a = (1 + math.Sqrt(fd)/S) * f32
		if s.EF && q.Inf && q.S >= 2 {
			return (1 + 2*math.Sqrt(fd)/(S-1)) * f32
		}
		c = math.Sqrt(fd) / S
	default:
		return math.Inf(1)
	}
	if !s.EF {
		return a
	}
	scale := EFScale(s.C, d)
	if _, ok := s.C.(RandK); ok {
		// EFScale k/d cancels random-k's d/k: the message keeps k
		// coordinates of z unscaled and the residual the rest.
		a, scale = 1, 1
	} else if scale != 1 {
		// The residual of C(scale z) is only bounded by
		// (1 + scale a) ||z||: no contraction to rely on.
		c = 1 + scale*a
	}
	// Geometric sum 1 + c + ... + c^(steps-1).
	var sum float64
	switch {
	case c < 1:
		sum = math.Min(float64(steps), (1-math.Pow(c, float64(steps)))/(1-c))
	case c == 1:
		sum = float64(steps)
	default:
		sum = (math.Pow(c, float64(steps)) - 1) / (c - 1)
	}
	return a * scale * sum
}
