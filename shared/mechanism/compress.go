package mechanism

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Compressor encodes a vector for the wire.
//
// Compress appends the payload of x to buf[:0] and writes into dec the
// exact vector Decode will produce from that payload (so callers that keep
// state derived from what was sent, such as error-feedback residuals and
// SoteriaFL shifts, agree with the server bit for bit). Randomised
// compressors draw from rng (never nil for them); rng may be nil for
// deterministic ones. x must be finite; a value that does not fit the
// payload's float type is an error. Compress does not allocate when buf has
// capacity Size(len(x)).
type Compressor interface {
	// String is the spec that ParseSpec turns back into this compressor.
	String() string
	// Unbiased reports whether E[C(x)] = x.
	Unbiased() bool
	// Omega is the variance parameter of SoteriaFL Definition 1 for
	// dimension d: E||C(x)-x||^2 <= Omega(d) ||x||^2; +Inf when biased.
	Omega(d int) float64
	// Size is the exact payload size in bytes for dimension d.
	Size(d int) int
	Compress(buf []byte, dec, x []float64, rng *Stream) ([]byte, error)
}

func checkArgs(dec, x []float64) error {
	if len(x) == 0 || len(x) > MaxDim {
		return fmt.Errorf("mechanism: dimension %d outside [1, %d]", len(x), MaxDim)
	}
	if len(dec) != len(x) {
		return fmt.Errorf("mechanism: dec has length %d, x %d", len(dec), len(x))
	}
	return CheckFinite(x)
}

// f32 converts to float32, rejecting values that overflow.
func f32(v float64, i int) (float32, error) {
	f := float32(v)
	if f-f != 0 {
		return 0, fmt.Errorf("mechanism: value %g at index %d overflows float32", v, i)
	}
	return f, nil
}

// Dense32 sends every coordinate as float32 (the baseline; omega = 0 up to
// float32 rounding, which is deterministic and therefore not unbiased in
// the strict sense; error feedback absorbs it exactly).
type Dense32 struct{}

func (Dense32) String() string    { return "none" }
func (Dense32) Unbiased() bool    { return true }
func (Dense32) Omega(int) float64 { return 0 }
func (Dense32) Size(d int) int    { return headerSize + 4*d }
func (Dense32) Compress(buf []byte, dec, x []float64, _ *Stream) ([]byte, error) {
	if err := checkArgs(dec, x); err != nil {
		return nil, err
	}
	buf = putHeader(buf[:0], KindDense32, len(x))
	for i, v := range x {
		f, err := f32(v, i)
		if err != nil {
			return nil, err
		}
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(f))
		dec[i] = float64(f)
	}
	return buf, nil
}

// Dense64 sends every coordinate as float64: exact, twice the bytes of
// Dense32. Useful for tests of exact identities and for the trusted server.
type Dense64 struct{}

func (Dense64) String() string    { return "f64" }
func (Dense64) Unbiased() bool    { return true }
func (Dense64) Omega(int) float64 { return 0 }
func (Dense64) Size(d int) int    { return headerSize + 8*d }
func (Dense64) Compress(buf []byte, dec, x []float64, _ *Stream) ([]byte, error) {
	if err := checkArgs(dec, x); err != nil {
		return nil, err
	}
	buf = putHeader(buf[:0], KindDense64, len(x))
	for i, v := range x {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
		dec[i] = v
	}
	return buf, nil
}

// fracK is the number of coordinates kept: ceil(frac*d) clamped to [1, d].
func fracK(frac float64, k, d int) int {
	if k > 0 {
		if k > d {
			return d
		}
		return k
	}
	n := int(math.Ceil(frac*float64(d) - 1e-9))
	if n < 1 {
		n = 1
	}
	if n > d {
		n = d
	}
	return n
}

// RandK is random-k sparsification (SoteriaFL, Example 1): keep k
// coordinates chosen uniformly without replacement and scale them by d/k.
// Unbiased with omega = d/k - 1. Either Frac (k = ceil(Frac*d)) or K is set.
type RandK struct {
	Frac float64
	K    int
}

func (c RandK) String() string {
	if c.K > 0 {
		return "randk:k=" + strconv.Itoa(c.K)
	}
	return "randk:" + strconv.FormatFloat(c.Frac, 'g', -1, 64)
}
func (RandK) Unbiased() bool { return true }
func (c RandK) Omega(d int) float64 {
	k := fracK(c.Frac, c.K, d)
	return float64(d)/float64(k) - 1
}
func (c RandK) Size(d int) int { return headerSize + 4 + 8*fracK(c.Frac, c.K, d) }

func (c RandK) Compress(buf []byte, dec, x []float64, rng *Stream) ([]byte, error) {
	if err := checkArgs(dec, x); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, fmt.Errorf("mechanism: randk needs a random stream")
	}
	d := len(x)
	k := fracK(c.Frac, c.K, d)
	// Floyd's algorithm draws a uniform k-subset with k calls to Intn; dec
	// doubles as the membership mark (1 = chosen) before it is filled.
	for i := range dec {
		dec[i] = 0
	}
	for j := d - k; j < d; j++ {
		t := rng.Intn(j + 1)
		if dec[t] != 0 {
			t = j
		}
		dec[t] = 1
	}
	scale := float64(d) / float64(k)
	buf = putHeader(buf[:0], KindSparse, d)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(k))
	for i := range dec {
		if dec[i] != 0 {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(i))
		}
	}
	for i := range dec {
		if dec[i] != 0 {
			f, err := f32(x[i]*scale, i)
			if err != nil {
				return nil, err
			}
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(f))
			dec[i] = float64(f)
		}
	}
	return buf, nil
}

// TopK keeps the k coordinates of largest magnitude (ties broken by lower
// index), unscaled. Biased; use it under error feedback.
type TopK struct {
	Frac float64
	K    int
}

func (c TopK) String() string {
	if c.K > 0 {
		return "topk:k=" + strconv.Itoa(c.K)
	}
	return "topk:" + strconv.FormatFloat(c.Frac, 'g', -1, 64)
}
func (TopK) Unbiased() bool    { return false }
func (TopK) Omega(int) float64 { return math.Inf(1) }
func (c TopK) Size(d int) int  { return headerSize + 4 + 8*fracK(c.Frac, c.K, d) }

func (c TopK) Compress(buf []byte, dec, x []float64, _ *Stream) ([]byte, error) {
	if err := checkArgs(dec, x); err != nil {
		return nil, err
	}
	d := len(x)
	k := fracK(c.Frac, c.K, d)
	// Threshold by selection: find the k-th largest |x| in a copy held in
	// dec (expected linear time), then keep entries above it and enough
	// ties, lowest index first.
	for i, v := range x {
		dec[i] = math.Abs(v)
	}
	thr := selectKth(dec, d-k)
	above := 0
	for _, v := range x {
		if math.Abs(v) > thr {
			above++
		}
	}
	ties := k - above
	for i, v := range x {
		a := math.Abs(v)
		switch {
		case a > thr:
			dec[i] = 1
		case a == thr && ties > 0:
			dec[i] = 1
			ties--
		default:
			dec[i] = 0
		}
	}
	buf = putHeader(buf[:0], KindSparse, d)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(k))
	for i := range dec {
		if dec[i] != 0 {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(i))
		}
	}
	for i := range dec {
		if dec[i] != 0 {
			f, err := f32(x[i], i)
			if err != nil {
				return nil, err
			}
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(f))
			dec[i] = float64(f)
		}
	}
	return buf, nil
}

// selectKth permutes a so that a[k] is the value it would have if a were
// sorted ascending, and returns it: quickselect with median-of-three
// pivots, falling back to a full sort after 2 log2(n) + 8 partitioning
// rounds (so adversarial inputs cost O(n log n), never O(n^2)).
func selectKth(a []float64, k int) float64 {
	lo, hi := 0, len(a)-1
	budget := 8
	for n := len(a); n > 1; n >>= 1 {
		budget += 2
	}
	for lo < hi {
		if budget == 0 {
			sort.Float64s(a[lo : hi+1])
			return a[k]
		}
		budget--
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		pivot := a[mid]
		i, j := lo, hi
		for i <= j {
			for a[i] < pivot {
				i++
			}
			for a[j] > pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return a[k]
		}
	}
	return a[k]
}

// Quant is random (stochastic) quantisation with S levels (QSGD, Alistarh
// et al. 2017): with r = ||x||_2 rounded up to float32, coordinate i is
// sent as r*sign(x_i)*l_i/S where l_i is floor(S|x_i|/r) or that plus one,
// rounded up with probability equal to the fractional part (decided by a
// 32-bit uniform, so the rounding probability is exact to 2^-32), so
// E[C(x)] = x. omega = min(d/S^2, sqrt(d)/S) (QSGD Lemma 3.1).
//
// With Inf set ("qinf" specs) the scale r is ||x||_inf instead of
// ||x||_2: the levels then span the largest coordinate rather than the
// whole vector's norm, which suits dense, noise-dominated vectors (a
// Gaussian vector's largest coordinate is about 4 sigma, its norm about
// sigma sqrt(d)). Each coordinate's rounding variance is at most
// (r/S)^2/4, so omega = d/(4 S^2) (r <= ||x||_2).
type Quant struct {
	S    int
	Inf  bool // scale by the largest |x_i| (payload kind KindQuantInf)
	bits bool // spec was given in bits
}

func (c Quant) String() string {
	name := "quant:"
	if c.Inf {
		name = "qinf:"
	}
	if c.bits {
		return name + strconv.Itoa(quantBits(c.S)) + "bit"
	}
	return name + "s=" + strconv.Itoa(c.S)
}
func (Quant) Unbiased() bool { return true }
func (c Quant) Omega(d int) float64 {
	s := float64(c.S)
	if c.Inf {
		return float64(d) / (4 * s * s)
	}
	return math.Min(float64(d)/(s*s), math.Sqrt(float64(d))/s)
}
func (c Quant) Size(d int) int { return headerSize + 9 + (d*quantBits(c.S)+7)/8 }

func (c Quant) Compress(buf []byte, dec, x []float64, rng *Stream) ([]byte, error) {
	if err := checkArgs(dec, x); err != nil {
		return nil, err
	}
	if c.S < 1 || c.S > MaxLevels {
		return nil, fmt.Errorf("mechanism: quant levels %d outside [1, %d]", c.S, MaxLevels)
	}
	if rng == nil {
		return nil, fmt.Errorf("mechanism: quant needs a random stream")
	}
	n := Norm(x)
	kind := KindQuant
	if c.Inf {
		n, kind = 0, KindQuantInf
		for _, v := range x {
			n = math.Max(n, math.Abs(v))
		}
	}
	r := float32(n)
	if math.IsInf(float64(r), 0) {
		return nil, fmt.Errorf("mechanism: norm %g overflows float32", n)
	}
	if float64(r) < n {
		r = math.Nextafter32(r, float32(math.Inf(1)))
	}
	nb := quantBits(c.S)
	buf = putHeader(buf[:0], kind, len(x))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(c.S))
	buf = append(buf, byte(nb))
	buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(r))
	w := bitWriter{buf: buf}
	s := float64(c.S)
	for i, v := range x {
		code := c.S
		if r > 0 && v != 0 {
			u := s * math.Abs(v) / float64(r) // in [0, s]
			l := math.Floor(u)
			if (float64(rng.uint32())+0.5)*(1.0/(1<<32)) < u-l {
				l++
			}
			if l > s {
				l = s
			}
			if v < 0 {
				code = c.S - int(l)
			} else {
				code = c.S + int(l)
			}
		}
		w.write(uint64(code), nb)
		dec[i] = quantValue(r, c.S, code)
	}
	return w.flush(), nil
}

// EFScale is the factor ErrorFeedback applies to x + e before compressing
// with c at dimension d: 1 for contractive compressors and for quantisers
// whose residual stays bounded (see ErrorFeedback), 1/(1+omega) for other
// unbiased compressors.
func EFScale(c Compressor, d int) float64 {
	if q, ok := c.(Quant); ok && ((q.Inf && q.S >= 2) || (!q.Inf && float64(q.S)*float64(q.S) > float64(d))) {
		return 1
	}
	if w := c.Omega(d); c.Unbiased() && w > 0 && !math.IsInf(w, 0) {
		return 1 / (1 + w)
	}
	return 1
}

// Spec is a parsed compressor spec: a compressor and whether the device
// wraps it in error feedback.
type Spec struct {
	EF bool
	C  Compressor
}

// String returns the canonical spec.
func (s Spec) String() string {
	if s.EF {
		return "ef+" + s.C.String()
	}
	return s.C.String()
}

// ParseSpec parses a compressor spec:
//
//	"" | "none" | "f32"     dense float32 (baseline)
//	"f64"                   dense float64
//	"randk:F" | "randk:k=K" random-k with k = ceil(F*d), 0 < F <= 1, or k = K
//	"topk:F"  | "topk:k=K"  top-k
//	"quant:Bbit"            random quantisation with B bits per coordinate
//	                        (2 <= B <= 25; s = 2^(B-1) - 1 levels)
//	"quant:s=S"             random quantisation with S levels (1 <= S <= 2^24)
//	"qinf:Bbit" | "qinf:s=S" the same, scaled by ||x||_inf instead of ||x||_2
//	"ef+SPEC"               any of the above under error feedback
func ParseSpec(spec string) (Spec, error) {
	orig := spec
	spec = strings.TrimSpace(strings.ToLower(spec))
	var out Spec
	if strings.HasPrefix(spec, "ef+") {
		out.EF = true
		spec = spec[3:]
		if spec == "" {
			return Spec{}, fmt.Errorf("mechanism: compressor spec %q: ef+ needs a compressor after it", orig)
		}
	}
	name, arg, hasArg := strings.Cut(spec, ":")
	fail := func(why string) (Spec, error) {
		return Spec{}, fmt.Errorf("mechanism: compressor spec %q: %s", orig, why)
	}
	switch name {
	case "", "none", "f32", "dense":
		if hasArg {
			return fail("takes no argument")
		}
		out.C = Dense32{}
	case "f64":
		if hasArg {
			return fail("takes no argument")
		}
		out.C = Dense64{}
	case "randk", "topk":
		if !hasArg {
			return fail("needs a fraction (randk:0.05) or a count (randk:k=100)")
		}
		frac, k := 0.0, 0
		if v, ok := strings.CutPrefix(arg, "k="); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxDim {
				return fail("k must be an integer in [1, 2^26]")
			}
			k = n
		} else {
			f, err := strconv.ParseFloat(arg, 64)
			if err != nil || !(f > 0 && f <= 1) {
				return fail("fraction must be a number in (0, 1]")
			}
			frac = f
		}
		if name == "randk" {
			out.C = RandK{Frac: frac, K: k}
		} else {
			out.C = TopK{Frac: frac, K: k}
		}
	case "quant", "qinf":
		if !hasArg {
			return fail("needs bits (" + name + ":8bit) or levels (" + name + ":s=255)")
		}
		inf := name == "qinf"
		if v, ok := strings.CutPrefix(arg, "s="); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxLevels {
				return fail("s must be an integer in [1, 2^24]")
			}
			out.C = Quant{S: n, Inf: inf}
		} else if v, ok := strings.CutSuffix(arg, "bit"); ok {
			b, err := strconv.Atoi(v)
			if err != nil || b < 2 || b > 25 {
				return fail("bits must be an integer in [2, 25]")
			}
			out.C = Quant{S: 1<<(b-1) - 1, Inf: inf, bits: true}
		} else {
			return fail("argument must be Bbit or s=S")
		}
	default:
		return fail("unknown compressor (want none, f64, randk, topk, quant, qinf, optionally ef+...)")
	}
	return out, nil
}

// ErrorFeedback performs one error-feedback step (Seide et al. 2014;
// Stich and Karimireddy 2019): it sends m = C'(x + e) and writes the new
// residual x + e - m into newE, which must alias neither x nor e. dec
// receives m.
// Summed over the steps a server includes, the messages equal the sum of
// the x's minus the last residual, exactly up to the rounding of the
// float64 additions.
//
// Error feedback needs a contractive compressor
// (E||C'(z) - z||^2 <= (1 - delta) ||z||^2 with delta > 0). Top-k is one
// (delta = k/d). An unbiased omega-compressor C is not when omega >= 1
// (random-k scales kept coordinates by d/k, and the residual would grow
// geometrically), so for those C'(z) = C(z / (1 + omega)), which is
// contractive with delta = 1/(1 + omega): E||C'(z) - z||^2 =
// (omega/(1+omega)^2 + (omega/(1+omega))^2) ||z||^2 = omega/(1+omega) ||z||^2.
// For random-k this is plain unscaled random-k.
//
// Quantisers keep their residual bounded without that scaling, because
// stochastic rounding moves each coordinate by less than one level: with
// z = x + e and levels r/S apart, |e'_i| < r/S. Scaled by ||z||_inf
// ("qinf"), r <= ||x||_inf + ||e||_inf, so ||e||_inf <= X/(S-1) for all
// steps when S >= 2, where X bounds ||x||_inf; scaled by ||z||_2 ("quant"),
// ||e'||_2 <= (sqrt(d)/S) ||z||_2, contractive when S > sqrt(d). Those
// cases send C(z) unscaled (see EFScale).
func ErrorFeedback(c Compressor, buf []byte, dec, newE, x, e []float64, rng *Stream) ([]byte, error) {
	if len(e) != len(x) || len(newE) != len(x) {
		return nil, fmt.Errorf("mechanism: error feedback: lengths x %d, e %d, newE %d", len(x), len(e), len(newE))
	}
	scale := EFScale(c, len(x))
	for i := range x {
		newE[i] = (x[i] + e[i]) * scale
	}
	buf, err := c.Compress(buf, dec, newE, rng)
	if err != nil {
		return nil, fmt.Errorf("error feedback: %w", err)
	}
	for i := range newE {
		newE[i] = x[i] + e[i] - dec[i]
	}
	return buf, nil
}

// Shifted performs one step of SoteriaFL shifted compression (Algorithm 2,
// lines 5-6): it sends v = C(x - h) and writes the new shift
// h + gamma*v into newH, which must not alias h. dec receives v.
func Shifted(c Compressor, buf []byte, dec, newH, x, h []float64, gamma float64, rng *Stream) ([]byte, error) {
	if len(h) != len(x) || len(newH) != len(x) {
		return nil, fmt.Errorf("mechanism: shifted compression: lengths x %d, h %d, newH %d", len(x), len(h), len(newH))
	}
	for i := range x {
		newH[i] = x[i] - h[i]
	}
	out, err := c.Compress(buf, dec, newH, rng)
	if err != nil {
		return nil, fmt.Errorf("shifted compression: %w", err)
	}
	for i := range newH {
		newH[i] = h[i] + gamma*dec[i]
	}
	return out, nil
}
