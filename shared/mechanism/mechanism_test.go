package mechanism

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
)

func seedOf(b byte) Seed {
	var s Seed
	for i := range s {
		s[i] = b + byte(i)
	}
	return s
}

func TestClip(t *testing.T) {
	tests := []struct {
		name   string
		v      []float64
		s      float64
		factor float64 // expected factor, NaN = "below 1"
	}{
		{"inside", []float64{0.3, 0.4}, 1, 1},
		{"on boundary", []float64{3, 4}, 5, 1},
		{"outside", []float64{3, 4}, 1, 0.2},
		{"huge", []float64{1e300, 1e300, -1e300}, 2, math.NaN()},
		{"tiny", []float64{1e-300, -1e-300}, 1, 1},
		{"zero bound", []float64{1, 2}, 0, 0},
		{"empty", nil, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := append([]float64(nil), tc.v...)
			f := Clip(v, tc.s)
			if n := Norm(v); n > math.Max(tc.s, 0) {
				t.Errorf("norm after Clip = %v > %v", n, tc.s)
			}
			if math.IsNaN(tc.factor) {
				if !(f < 1 && f > 0) {
					t.Errorf("factor = %v, want in (0, 1)", f)
				}
			} else if math.Abs(f-tc.factor) > 1e-15 {
				t.Errorf("factor = %v, want %v", f, tc.factor)
			}
		})
	}
}

func TestClipBoundIsExactUnderRounding(t *testing.T) {
	// Many random directions scaled far outside the ball: the clipped norm
	// must never exceed S even by one ulp.
	rng := NewStream(seedOf(1), PurposeCoins)
	v := make([]float64, 7850)
	for trial := 0; trial < 200; trial++ {
		rng.FillNormal(v, math.Pow(10, float64(trial%40-20)))
		S := 0.1 + rng.Float64()*10
		Clip(v, S)
		if n := fastNorm(v); n > S {
			t.Fatalf("trial %d: norm %v > S = %v", trial, n, S)
		}
	}
}

func TestCheckFinite(t *testing.T) {
	if err := CheckFinite([]float64{1, 2, 3}); err != nil {
		t.Fatalf("finite vector rejected: %v", err)
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		err := CheckFinite([]float64{0, 1, bad, 2})
		if err == nil || !strings.Contains(err.Error(), "index 2") {
			t.Errorf("CheckFinite with %v at index 2: err = %v, want one naming index 2", bad, err)
		}
	}
}

func TestStreamReproducible(t *testing.T) {
	a := make([]float64, 1001)
	b := make([]float64, 1001)
	NoiseVector(a, seedOf(7), 2.5, nil)
	var scratch = NewStream(seedOf(99), PurposeCoins)
	NoiseVector(b, seedOf(7), 2.5, scratch)
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			t.Fatalf("regenerated noise differs at %d: %v vs %v", i, a[i], b[i])
		}
	}
	NoiseVector(b, seedOf(8), 2.5, scratch)
	same := 0
	for i := range a {
		if a[i] == b[i] {
			same++
		}
	}
	if same > 0 {
		t.Errorf("different seeds share %d coordinates", same)
	}
	// Different purposes give different streams.
	x, y := NewStream(seedOf(7), PurposeNoise), NewStream(seedOf(7), PurposeCompress)
	if x.Uint64() == y.Uint64() {
		t.Error("noise and compression streams of one seed coincide")
	}
}

func TestStreamReadAndUint64Interleave(t *testing.T) {
	// Reading odd byte counts must not break alignment of later Uint64s:
	// the stream is the same byte sequence whatever the read sizes.
	s1 := NewStream(seedOf(3), PurposeSeeds)
	all := make([]byte, 3*4096)
	s1.Read(all)
	s2 := NewStream(seedOf(3), PurposeSeeds)
	var got bytes.Buffer
	p := make([]byte, 13)
	for got.Len() < 3*4096-64 {
		s2.Read(p)
		got.Write(p)
		var b [8]byte
		u := s2.Uint64()
		for i := range b {
			b[i] = byte(u >> (8 * i))
		}
		got.Write(b[:])
	}
	if !bytes.Equal(got.Bytes(), all[:got.Len()]) {
		t.Fatal("mixed Read/Uint64 consumption differs from the plain keystream")
	}
}

func TestNormalMoments(t *testing.T) {
	// R vectors of dimension d with sigma = 3.
	// (1) Per-coordinate means m_j over R draws: R m_j^2 / sigma^2 are d
	//     independent chi^2_1, so their sum is chi^2_d with mean d and
	//     standard deviation sqrt(2d); |sum - d| <= 5 sqrt(2d) fails wrongly
	//     with probability < 1e-6 (d = 400 makes chi^2_d near normal).
	// (2) The sum of all z^2 is chi^2_{dR}: |sum - dR| <= 5 sqrt(2dR).
	// (3) The fraction within one sigma is 0.682689...; its standard error
	//     is sqrt(p(1-p)/(dR)); 5 standard errors.
	const d, R, sigma = 400, 500, 3.0
	s := NewStream(seedOf(42), PurposeNoise)
	v := make([]float64, d)
	mean := make([]float64, d)
	sumsq, within := 0.0, 0
	for r := 0; r < R; r++ {
		s.FillNormal(v, sigma)
		for j, x := range v {
			mean[j] += x / R
			z := x / sigma
			sumsq += z * z
			if math.Abs(z) < 1 {
				within++
			}
		}
	}
	chi := 0.0
	for _, m := range mean {
		chi += R * m * m / (sigma * sigma)
	}
	if math.Abs(chi-d) > 5*math.Sqrt(2*d) {
		t.Errorf("per-coordinate mean statistic %v, want %v ± %v", chi, float64(d), 5*math.Sqrt(2*d))
	}
	n := float64(d * R)
	if math.Abs(sumsq-n) > 5*math.Sqrt(2*n) {
		t.Errorf("sum of squares %v, want %v ± %v", sumsq, n, 5*math.Sqrt(2*n))
	}
	p := 0.6826894921370859
	if f := float64(within) / n; math.Abs(f-p) > 5*math.Sqrt(p*(1-p)/n) {
		t.Errorf("fraction within one sigma %v, want %v", f, p)
	}
}

func TestIntnUniform(t *testing.T) {
	// Counts in n = 7 cells over N draws: Pearson chi^2 with 6 degrees of
	// freedom; P(chi^2_6 > 40) < 5e-7.
	s := NewStream(seedOf(5), PurposeCoins)
	const n, N = 7, 70000
	var c [n]int
	for i := 0; i < N; i++ {
		c[s.Intn(n)]++
	}
	chi := 0.0
	for _, k := range c {
		e := float64(N) / n
		chi += (float64(k) - e) * (float64(k) - e) / e
	}
	if chi > 40 {
		t.Errorf("chi^2 = %v over %v", chi, c)
	}
}

func mustSpec(t testing.TB, s string) Spec {
	t.Helper()
	sp, err := ParseSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func testVector(d int, seed byte) []float64 {
	s := NewStream(seedOf(seed), PurposeCoins)
	x := make([]float64, d)
	s.FillNormal(x, 1)
	for i := range x {
		x[i] += 0.3 * float64(i%3)
	}
	return x
}

func TestUnbiasedAndOmega(t *testing.T) {
	// For each unbiased compressor, over R draws:
	//  - each coordinate's mean is within 5 standard errors of x_i, where the
	//    per-draw variance is bounded analytically: randk has variance
	//    x_i^2 (d/k - 1); quantisation at most (r/s)^2/4. Union over d = 20
	//    coordinates: false failure < 20 * 5.7e-7. A float32 rounding slack
	//    of 1e-6 |x_i| covers the f32 payload values.
	//  - the mean squared error is at most omega ||x||^2 plus 5 standard
	//    errors of the mean estimated from the sample (CLT).
	const d, R = 20, 20000
	x := testVector(d, 11)
	xn2 := Norm(x) * Norm(x)
	for _, spec := range []string{"randk:0.25", "randk:k=1", "quant:s=1", "quant:4bit", "quant:s=255", "qinf:s=1", "qinf:3bit"} {
		t.Run(spec, func(t *testing.T) {
			c := mustSpec(t, spec).C
			rng := NewStream(seedOf(12), PurposeCompress)
			dec := make([]float64, d)
			mean := make([]float64, d)
			var buf []byte
			var se, se2 float64
			for r := 0; r < R; r++ {
				var err error
				buf, err = c.Compress(buf, dec, x, rng)
				if err != nil {
					t.Fatal(err)
				}
				e := 0.0
				for i := range dec {
					mean[i] += dec[i] / R
					e += (dec[i] - x[i]) * (dec[i] - x[i])
				}
				se += e / R
				se2 += e * e / R
			}
			omega := c.Omega(d)
			for i := range x {
				var sd float64
				switch cc := c.(type) {
				case RandK:
					sd = math.Abs(x[i]) * math.Sqrt(omega)
				case Quant:
					r := math.Sqrt(xn2)
					if cc.Inf {
						r = 0
						for _, v := range x {
							r = math.Max(r, math.Abs(v))
						}
					}
					sd = r / float64(cc.S) / 2 * 1.0000001
				}
				tol := 5*sd/math.Sqrt(R) + 1e-6*math.Abs(x[i])
				if math.Abs(mean[i]-x[i]) > tol {
					t.Errorf("coordinate %d: mean %v, want %v ± %v", i, mean[i], x[i], tol)
				}
			}
			sd := math.Sqrt(math.Max(se2-se*se, 0))
			if se > omega*xn2+5*sd/math.Sqrt(R)+1e-9 {
				t.Errorf("E||C(x)-x||^2 ≈ %v > omega ||x||^2 = %v", se, omega*xn2)
			}
		})
	}
}

var allSpecs = []string{"none", "f64", "randk:0.05", "randk:k=3", "topk:0.01", "topk:k=7", "quant:8bit", "quant:s=255", "quant:2bit", "quant:s=1", "qinf:3bit", "qinf:s=1", "ef+topk:0.01", "ef+qinf:3bit"}

func TestSizeExactAndDecodeMatches(t *testing.T) {
	for _, spec := range allSpecs {
		for _, d := range []int{1, 7, 64, 7850} {
			c := mustSpec(t, spec).C
			x := testVector(d, byte(d))
			dec := make([]float64, d)
			got := make([]float64, d)
			rng := NewStream(seedOf(1), PurposeCompress)
			p, err := c.Compress(nil, dec, x, rng)
			if err != nil {
				t.Fatalf("%s d=%d: %v", spec, d, err)
			}
			if len(p) != c.Size(d) {
				t.Errorf("%s d=%d: payload %d bytes, Size says %d", spec, d, len(p), c.Size(d))
			}
			if err := Decode(got, p); err != nil {
				t.Fatalf("%s d=%d: decode: %v", spec, d, err)
			}
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(dec[i]) {
					t.Fatalf("%s d=%d: decoded[%d] = %v, compressor said %v", spec, d, i, got[i], dec[i])
				}
			}
		}
	}
}

func TestTopKKeepsLargest(t *testing.T) {
	x := []float64{0.1, -5, 3, 0, 2, -3}
	dec := make([]float64, len(x))
	if _, err := (TopK{K: 3}).Compress(nil, dec, x, nil); err != nil {
		t.Fatal(err)
	}
	want := []float64{0, -5, 3, 0, 0, -3}
	for i := range want {
		if dec[i] != want[i] {
			t.Fatalf("topk = %v, want %v", dec, want)
		}
	}
}

func TestErrorFeedbackTelescopes(t *testing.T) {
	// Sum of sent messages = sum of inputs - final residual, for every
	// compressor (the identity does not depend on the compressor).
	const d = 50
	for _, spec := range []string{"topk:0.1", "randk:0.1", "quant:4bit", "none"} {
		c := mustSpec(t, spec).C
		rng := NewStream(seedOf(2), PurposeCompress)
		e, next := make([]float64, d), make([]float64, d)
		dec := make([]float64, d)
		sumX := make([]float64, d)
		sumM := make([]float64, d)
		for step := 0; step < 100; step++ {
			x := testVector(d, byte(step))
			if _, err := ErrorFeedback(c, nil, dec, next, x, e, rng); err != nil {
				t.Fatal(err)
			}
			e, next = next, e
			for i := range x {
				sumX[i] += x[i]
				sumM[i] += dec[i]
			}
		}
		for i := range sumX {
			// Rounding of 100 additions of O(1) numbers: well below 1e-10.
			if diff := sumX[i] - e[i] - sumM[i]; math.Abs(diff) > 1e-10 {
				t.Fatalf("%s coordinate %d: sum x - e - sum m = %v", spec, i, diff)
			}
		}
	}
}

func TestErrorFeedbackResidualStaysBounded(t *testing.T) {
	// mx and mxn are the largest |x_i| and ||x|| actually drawn.
	//  - randk under EF is unscaled random-k: coordinate i's residual is
	//    the sum of the x_i since it was last kept, and P(not kept for 200
	//    steps) = (1 - k/d)^200 = 0.9^200 = 7e-10, so |e_i| <= 200 mx
	//    except with probability < 50 * 2000 * 7e-10 = 7e-5 over the run.
	//  - topk (delta = k/d): ||e'|| <= sqrt(1-delta) ||x + e||, so
	//    ||e|| <= sqrt(1-delta)/(1-sqrt(1-delta)) max||x|| deterministically.
	//  - quant under EF has E||e'||^2 <= (1-delta')(||x + e||^2) with
	//    delta' = 1/(1+omega); the check below (||e|| <= 200 mx sqrt(d)) only
	//    guards against the geometric blow-up of an uncorrected unbiased
	//    compressor, which reaches 1e30 within these 2000 steps.
	const d, steps = 50, 2000
	for _, spec := range []string{"randk:0.1", "topk:0.1", "quant:2bit", "qinf:3bit"} {
		c := mustSpec(t, spec).C
		rng := NewStream(seedOf(9), PurposeCompress)
		e, next := make([]float64, d), make([]float64, d)
		dec := make([]float64, d)
		mx, mxn, worst, worstN := 0.0, 0.0, 0.0, 0.0
		for step := 0; step < steps; step++ {
			x := testVector(d, byte(step))
			mx = math.Max(mx, maxAbsF(x))
			mxn = math.Max(mxn, Norm(x))
			if _, err := ErrorFeedback(c, nil, dec, next, x, e, rng); err != nil {
				t.Fatalf("%s step %d: %v", spec, step, err)
			}
			e, next = next, e
			worst = math.Max(worst, maxAbsF(e))
			worstN = math.Max(worstN, Norm(e))
		}
		switch spec {
		case "randk:0.1":
			if worst > 200*mx {
				t.Errorf("%s: max |e_i| = %v > 200 * %v", spec, worst, mx)
			}
		case "topk:0.1":
			q := math.Sqrt(1 - 0.1)
			if lim := q / (1 - q) * mxn * (1 + 1e-9); worstN > lim {
				t.Errorf("%s: max ||e|| = %v > %v", spec, worstN, lim)
			}
		case "qinf:3bit":
			// Unscaled under EF (EFScale = 1): ||e||_inf <= X/(S-1)
			// deterministically, S = 3; float32 rounding of the scale
			// is covered by the factor 1 + 1e-6.
			if lim := mx / 2 * (1 + 1e-6); worst > lim {
				t.Errorf("%s: max |e_i| = %v > X/(S-1) = %v", spec, worst, lim)
			}
		default:
			if lim := 200 * mx * math.Sqrt(d); worstN > lim {
				t.Errorf("%s: max ||e|| = %v > %v", spec, worstN, lim)
			}
		}
	}
}

func maxAbsF(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

func TestParseSpec(t *testing.T) {
	good := map[string]string{
		"":             "none",
		"none":         "none",
		"F64":          "f64",
		"randk:0.05":   "randk:0.05",
		"randk:k=10":   "randk:k=10",
		"topk:0.01":    "topk:0.01",
		"ef+topk:0.01": "ef+topk:0.01",
		"quant:8bit":   "quant:8bit",
		"quant:s=255":  "quant:s=255",
		"ef+quant:s=3": "ef+quant:s=3",
		"qinf:3bit":    "qinf:3bit",
		"ef+qinf:s=7":  "ef+qinf:s=7",
		"ef+none":      "ef+none",
	}
	for in, want := range good {
		sp, err := ParseSpec(in)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", in, err)
			continue
		}
		if sp.String() != want {
			t.Errorf("ParseSpec(%q).String() = %q, want %q", in, sp.String(), want)
		}
		if again, err := ParseSpec(sp.String()); err != nil || again.String() != want {
			t.Errorf("round trip of %q: %v %v", want, again, err)
		}
	}
	if sp := mustSpec(t, "quant:8bit"); sp.C.(Quant).S != 127 {
		t.Errorf("quant:8bit has s = %d, want 127", sp.C.(Quant).S)
	}
	for _, in := range []string{"zip", "randk", "randk:0", "randk:1.5", "randk:abc", "randk:k=0", "topk:-1",
		"quant", "quant:1bit", "quant:26bit", "quant:s=0", "quant:x", "none:3", "ef+", "ef+ef+none", "f64:1"} {
		if _, err := ParseSpec(in); err == nil {
			t.Errorf("ParseSpec(%q) accepted a bad spec", in)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	x := []float64{1, -2, 3, 0.5}
	dec := make([]float64, 4)
	valid := map[string][]byte{}
	for _, spec := range []string{"none", "f64", "randk:k=2", "quant:s=3"} {
		p, err := mustSpec(t, spec).C.Compress(nil, dec, x, NewStream(seedOf(0), 1))
		if err != nil {
			t.Fatal(err)
		}
		valid[spec] = p
	}
	nan32 := append([]byte(nil), valid["none"]...)
	copy(nan32[5:], []byte{0, 0, 0xc0, 0x7f})
	inf64 := append([]byte(nil), valid["f64"]...)
	copy(inf64[5:], []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x7f})
	dupIdx := append([]byte(nil), valid["randk:k=2"]...)
	copy(dupIdx[13:17], dupIdx[9:13])
	badCode := append([]byte(nil), valid["quant:s=3"]...)
	badCode[len(badCode)-2] = 0xff
	cases := map[string][]byte{
		"empty":          nil,
		"short header":   {1, 4, 0},
		"zero dim":       {1, 0, 0, 0, 0},
		"unknown kind":   {9, 4, 0, 0, 0},
		"huge dim":       {1, 0xff, 0xff, 0xff, 0xff},
		"truncated":      valid["none"][:len(valid["none"])-1],
		"trailing":       append(append([]byte(nil), valid["f64"]...), 0),
		"nan f32":        nan32,
		"inf f64":        inf64,
		"dup index":      dupIdx,
		"quant code":     badCode,
		"k above dim":    {3, 4, 0, 0, 0, 5, 0, 0, 0},
		"wrong dim here": append([]byte{1, 3, 0, 0, 0}, make([]byte, 12)...),
	}
	for name, p := range cases {
		if err := Decode(dec, p); err == nil || !errors.Is(err, ErrPayload) {
			t.Errorf("%s: Decode err = %v, want ErrPayload", name, err)
		}
	}
}

func TestDecodeRandomGarbageNeverPanics(t *testing.T) {
	s := NewStream(seedOf(77), PurposeCoins)
	dst := make([]float64, 16)
	for i := 0; i < 20000; i++ {
		p := make([]byte, s.Intn(200))
		s.Read(p)
		if len(p) > 0 {
			p[0] = byte(1 + s.Intn(4))
		}
		if len(p) >= 5 {
			p[1], p[2], p[3], p[4] = 16, 0, 0, 0
		}
		if err := Decode(dst, p); err == nil {
			if err := CheckFinite(dst); err != nil {
				t.Fatalf("Decode accepted a payload producing %v", err)
			}
		}
	}
}

func FuzzDecode(f *testing.F) {
	x := []float64{1, -2, 3, 0.5, 0, 7}
	dec := make([]float64, len(x))
	for _, spec := range allSpecs {
		p, err := mustSpec(f, spec).C.Compress(nil, dec, x, NewStream(seedOf(0), 1))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		k, d, err := Header(p)
		if err != nil {
			if Decode(make([]float64, 6), p) == nil {
				t.Fatal("Decode accepted a payload Header rejects")
			}
			return
		}
		if d > 1<<16 {
			return
		}
		dst := make([]float64, d)
		if err := Decode(dst, p); err != nil {
			return
		}
		if err := CheckFinite(dst); err != nil {
			t.Fatalf("kind %d: decoded non-finite: %v", k, err)
		}
		got, err := DecodeNorm(dst, p)
		if err != nil {
			t.Fatalf("kind %d: DecodeNorm refused what Decode accepted: %v", k, err)
		}
		if want := Norm(dst); !(math.Abs(got-want) <= 1e-12*want) {
			t.Fatalf("kind %d: DecodeNorm %v, Norm %v", k, got, want)
		}
	})
}

// TestDecodeNorm checks DecodeNorm against Decode and the scaled Norm on
// moderate, huge (the plain sum of squares overflows), tiny (it
// underflows) and zero vectors, and that a non-finite value anywhere in
// a dense float32 payload (the four-way unrolled loop and its tail) is
// refused with its index.
func TestDecodeNorm(t *testing.T) {
	dense32, _ := ParseSpec("none")
	dense64, _ := ParseSpec("f64")
	cases := []struct {
		name string
		spec Spec
		x    []float64
	}{
		{"moderate f32", dense32, testVector(1003, 5)},
		{"moderate f64", dense64, testVector(1003, 6)},
		{"huge f64", dense64, []float64{1e300, -3e300, 2e300, 5}},
		{"tiny f64", dense64, []float64{1e-310, -3e-311, 0, 2e-312, 4e-320}},
		{"zero f32", dense32, make([]float64, 9)},
	}
	for _, tc := range cases {
		p, err := tc.spec.C.Compress(nil, make([]float64, len(tc.x)), tc.x, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		dst := make([]float64, len(tc.x))
		got, err := DecodeNorm(dst, p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := Norm(dst)
		if math.IsInf(got, 0) || math.Abs(got-want) > 1e-12*want {
			t.Errorf("%s: DecodeNorm %v, Norm %v", tc.name, got, want)
		}
	}
	x := testVector(11, 7)
	for i := range x {
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
			p, _ := dense32.C.Compress(nil, make([]float64, len(x)), x, nil)
			binary.LittleEndian.PutUint32(p[headerSize+4*i:], math.Float32bits(bad))
			_, err := DecodeNorm(make([]float64, len(x)), p)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("index %d", i)) {
				t.Errorf("%v at %d: got %v", bad, i, err)
			}
		}
	}
}

func TestNormalKolmogorovSmirnov(t *testing.T) {
	// One-sample Kolmogorov–Smirnov test of n draws against Phi: with
	// lambda = sqrt(n) D, P(lambda > 2.7) = 2 sum_k (-1)^(k-1) exp(-2 k^2
	// 2.7^2) ≈ 9e-7 asymptotically (n = 200,000 is deep in that regime;
	// the 2^-24 resolution of the ziggurat adds at most ~1e-7 to D). The
	// tail beyond the ziggurat's r = 3.4426 is checked separately: its
	// mass 2(1 - Phi(r)) = 5.76e-4 gives a binomial count with mean 115
	// and sd 10.7; 5 sd.
	const n = 200000
	s := NewStream(seedOf(21), PurposeNoise)
	x := make([]float64, n)
	s.FillNormal(x, 1)
	sortFloat(x)
	d := 0.0
	tail := 0
	for i, v := range x {
		c := 0.5 * math.Erfc(-v/math.Sqrt2)
		d = math.Max(d, math.Max(math.Abs(c-float64(i)/n), math.Abs(c-float64(i+1)/n)))
		if math.Abs(v) > zigR {
			tail++
		}
	}
	if l := math.Sqrt(n) * d; l > 2.7 {
		t.Errorf("KS statistic sqrt(n) D = %v > 2.7", l)
	}
	p := math.Erfc(zigR / math.Sqrt2)
	mean, sd := n*p, math.Sqrt(n*p*(1-p))
	if math.Abs(float64(tail)-mean) > 5*sd {
		t.Errorf("%d draws beyond r, want %v ± %v", tail, mean, 5*sd)
	}
}

func sortFloat(x []float64) { sort.Float64s(x) }

func TestSelectKth(t *testing.T) {
	// Against a full sort, on random data, many ties, sorted and reversed
	// input, for every k of small sizes and some k of a large one.
	rng := NewStream(seedOf(15), PurposeCoins)
	inputs := map[string][]float64{}
	for _, n := range []int{1, 2, 3, 7, 64, 1000} {
		r := make([]float64, n)
		tie := make([]float64, n)
		asc := make([]float64, n)
		desc := make([]float64, n)
		for i := range r {
			r[i] = rng.NormFloat64()
			tie[i] = float64(rng.Intn(3))
			asc[i] = float64(i)
			desc[i] = float64(n - i)
		}
		for name, v := range map[string][]float64{"random": r, "ties": tie, "asc": asc, "desc": desc} {
			inputs[name+"/"+fmt.Sprint(n)] = v
		}
	}
	for name, v := range inputs {
		want := append([]float64(nil), v...)
		sort.Float64s(want)
		step := 1
		if len(v) > 64 {
			step = 37
		}
		for k := 0; k < len(v); k += step {
			a := append([]float64(nil), v...)
			if got := selectKth(a, k); got != want[k] {
				t.Fatalf("%s k=%d: got %v, want %v", name, k, got, want[k])
			}
		}
	}
}
