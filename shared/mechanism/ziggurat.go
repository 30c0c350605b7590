package mechanism

import "math"

// Standard normals by the ziggurat method (Marsaglia and Tsang 2000, "The
// Ziggurat Method for Generating Random Variables", J. Stat. Softw. 5(8)),
// 128 layers, with Doornik's (2005) correction: the layer index and the
// value come from disjoint bits of one 32-bit word (7 bits for the layer,
// a signed 25-bit integer j for the value), so they are independent. Per
// normal the fast path consumes 4 keystream bytes and no transcendental
// function (it accepts about 98.8% of draws); the wedges and the tail
// (|x| > r = 3.442619855899) are sampled exactly by rejection, so the
// output is N(0, 1) up to the 2^-24 resolution of j.

const (
	zigR     = 3.442619855899
	zigV     = 9.91256303526217e-3 // area of each layer
	zigScale = 1 << 24             // |j| < 2^24
)

type zigTables struct {
	k [128]uint32  // acceptance thresholds for |j|
	w [128]float64 // x = j * w[i]
	f [128]float64 // exp(-x_i^2/2) at the layer edges
}

// zig is computed once at package initialisation and never written again.
var zig = newZigTables()

func newZigTables() *zigTables {
	t := &zigTables{}
	dn, tn := zigR, zigR
	q := zigV / math.Exp(-0.5*dn*dn)
	t.k[0] = uint32(dn / q * zigScale)
	t.k[1] = 0
	t.w[0] = q / zigScale
	t.w[127] = dn / zigScale
	t.f[0] = 1
	t.f[127] = math.Exp(-0.5 * dn * dn)
	for i := 126; i >= 1; i-- {
		dn = math.Sqrt(-2 * math.Log(zigV/dn+math.Exp(-0.5*dn*dn)))
		t.k[i+1] = uint32(dn / tn * zigScale)
		tn = dn
		t.f[i] = math.Exp(-0.5 * dn * dn)
		t.w[i] = dn / zigScale
	}
	return t
}

// zigNormal returns one standard normal.
func (s *Stream) zigNormal() float64 {
	t := zig
	for {
		u := s.uint32()
		i := u & 127
		j := int32(u) >> 7 // signed, in [-2^24, 2^24)
		aj := j
		if aj < 0 {
			aj = -aj
		}
		x := float64(j) * t.w[i]
		if uint32(aj) < t.k[i] {
			return x
		}
		if i == 0 {
			// Tail beyond r: Marsaglia (1964).
			for {
				a := -math.Log(s.Float64()) / zigR
				b := -math.Log(s.Float64())
				if b+b >= a*a {
					if j < 0 {
						return -(zigR + a)
					}
					return zigR + a
				}
			}
		}
		// Wedge between layers i-1 and i.
		if t.f[i]+s.Float64()*(t.f[i-1]-t.f[i]) < math.Exp(-0.5*x*x) {
			return x
		}
	}
}

// ZigLattice reports whether z lies, within tol, on the output set of the
// ziggurat's fast path and wedges: j * w[i] for a layer i and an integer
// |j| < 2^24. It is the structure the floating-point attack (Mironov 2012)
// (Mironov 2012) reads in a release made of a float plus ziggurat noise;
// the audits of the devices' and the trusted server's releases use it
// (TestFloatingPointDistinguisher, TestTrustedFloatingPointDistinguisher).
func ZigLattice(z, tol float64) bool {
	for i := range zig.w {
		j := z / zig.w[i]
		if math.Abs(j) < zigScale && math.Abs(j-math.Round(j)) <= tol {
			return true
		}
	}
	return false
}
