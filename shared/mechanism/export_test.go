package mechanism

import "math"

// ZigLattice reports whether z lies, within tol, on the output set of the
// ziggurat's fast path and wedges: j * w[i] for a layer i and an integer
// |j| < 2^24 (the structure the floating-point attack of issue 9 uses).
// Exported to the external tests only.
func ZigLattice(z, tol float64) bool {
	for i := range zig.w {
		j := z / zig.w[i]
		if math.Abs(j) < zigScale && math.Abs(j-math.Round(j)) <= tol {
			return true
		}
	}
	return false
}
