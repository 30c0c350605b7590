// Package scatter computes the scattering transform of a square grey
// image (Mallat 2012; Bruna and Mallat 2013; the 2-D Morlet filter bank
// of Oyallon and Mallat, as in Kymatio): fixed wavelets, no learned
// weights, so features computed from one image reveal nothing about any
// other image and cost no privacy. Tramer and Boneh (ICLR 2021,
// "Differentially Private Learning Needs Better Features") show that a
// linear model on these features beats end-to-end private CNNs.
//
// With J scales and L angles an image of side n gives 1 + J L +
// L^2 J (J - 1) / 2 channels of side n / 2^J: for 28 x 28, J = 2, L = 8,
// 81 channels of 7 x 7 (3,969 features). Order 0 is the image averaged by
// the low-pass filter phi; order 1 is |x * psi_{j1,t1}| * phi; order 2 is
// ||x * psi_{j1,t1}| * psi_{j2,t2}| * phi for j2 > j1. Convolutions are
// products of 2-D FFTs (gonum's dsp/fourier) on the image zero-padded to
// a power of two; each intermediate is computed at the resolution its
// filter allows (Kymatio's scheme: subsampling in space is periodisation
// of the spectrum), so an image costs about 170 small 2-D FFTs.
//
// Normalisation reads only the image itself: each group of channels is
// scaled to mean 0 and variance 1 over its own values (group
// normalisation per image, Tramer and Boneh's data-independent choice).
// No statistic of other images enters, so a device computing features
// for its own pictures spends no budget.
//
// The same code runs natively and in WebAssembly; a Transform holds
// scratch buffers and is not safe for concurrent use (make one per
// goroutine).
package scatter

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"

	"gonum.org/v1/gonum/dsp/fourier"
)

// Transform is a scattering transform for images of one size.
type Transform struct {
	size, n, j, l int
	groups        int
	pad           int
	// Filters in the Fourier domain at each resolution r (side n >> r):
	// phi[r], psi[r][j*L + t] for j >= r.
	phi [][]complex128
	psi [][][]complex128
	fft []*fft2 // by resolution
	// scratch
	x, u1, y, u2 []complex128
}

// Config names a transform. Zero fields take the defaults of Tramer and
// Boneh: J = 2, L = 8, 27 normalisation groups.
type Config struct {
	Size   int // side of the input image (28 for Fashion-MNIST)
	J, L   int
	Groups int // channels are normalised in this many groups (0: no normalisation)
}

// DefaultConfig is J = 2, L = 8 on 28 x 28 images with 27 groups of three
// channels.
var DefaultConfig = Config{Size: 28, J: 2, L: 8, Groups: 27}

// New builds the filter bank.
func New(c Config) (*Transform, error) {
	if c.Size < 4 || c.J < 1 || c.L < 1 || c.J > 4 || c.L > 16 {
		return nil, fmt.Errorf("scatter: size %d, J %d, L %d: want size >= 4, 1 <= J <= 4, 1 <= L <= 16", c.Size, c.J, c.L)
	}
	if c.Size%(1<<c.J) != 0 {
		return nil, fmt.Errorf("scatter: size %d is not a multiple of 2^J = %d", c.Size, 1<<c.J)
	}
	t := &Transform{size: c.Size, j: c.J, l: c.L, groups: c.Groups}
	n := 1
	for n < c.Size+2*(1<<c.J)/2 {
		n *= 2
	}
	t.n, t.pad = n, (n-c.Size)/2
	if ch := t.Channels(); c.Groups < 0 || (c.Groups > 0 && ch%c.Groups != 0) {
		return nil, fmt.Errorf("scatter: %d groups do not divide %d channels", c.Groups, ch)
	}
	full := make([]complex128, n*n)
	for r := 0; r <= c.J; r++ {
		t.fft = append(t.fft, newFFT2(n>>r))
	}
	// phi: a Gaussian of sigma 0.8 2^J; psi: Morlet of sigma 0.8 2^j,
	// frequency 3 pi / 4 / 2^j, slant 4 / L, angle (L - 1 - t) pi / L
	// (Kymatio's parameters).
	gabor(full, n, 0.8*float64(int(1)<<c.J), 0, 0, 1)
	t.fft[0].forward(full)
	phi0 := realPart(full)
	t.psi = make([][][]complex128, c.J+1)
	t.phi = make([][]complex128, c.J+1)
	for r := 0; r <= c.J; r++ {
		t.phi[r] = crop(phi0, n, r)
		t.psi[r] = make([][]complex128, c.J*c.L)
	}
	for j := 0; j < c.J; j++ {
		for th := 0; th < c.L; th++ {
			theta := float64(c.L-c.L/2-1-th) * math.Pi / float64(c.L)
			morlet(full, n, 0.8*float64(int(1)<<j), theta, 3*math.Pi/4/float64(int(1)<<j), 4/float64(c.L))
			t.fft[0].forward(full)
			f := realPart(full)
			for r := 0; r <= j; r++ {
				t.psi[r][j*c.L+th] = crop(f, n, r)
			}
		}
	}
	t.x = make([]complex128, n*n)
	t.u1 = make([]complex128, n*n)
	t.y = make([]complex128, n*n)
	t.u2 = make([]complex128, n*n)
	return t, nil
}

// Channels is the number of output channels.
func (t *Transform) Channels() int { return 1 + t.j*t.l + t.l*t.l*t.j*(t.j-1)/2 }

// Side is the side of each output channel.
func (t *Transform) Side() int { return t.size >> t.j }

// Dim is the number of features of one image.
func (t *Transform) Dim() int { return t.Channels() * t.Side() * t.Side() }

// ErrSize is returned for an image of the wrong size or with a value that
// is not finite.
var ErrSize = errors.New("scatter: image does not fit the transform")

// Apply writes the features of img (size x size, row-major) into dst
// (len Dim()), channel by channel.
func (t *Transform) Apply(dst []float32, img []float32) error {
	if len(img) != t.size*t.size || len(dst) != t.Dim() {
		return fmt.Errorf("%w: image of %d values and %d features, want %d and %d", ErrSize, len(img), len(dst), t.size*t.size, t.Dim())
	}
	n := t.n
	clear(t.x)
	for r := 0; r < t.size; r++ {
		for c := 0; c < t.size; c++ {
			v := float64(img[r*t.size+c])
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%w: value %v at (%d, %d)", ErrSize, v, r, c)
			}
			t.x[(r+t.pad)*n+c+t.pad] = complex(v, 0)
		}
	}
	t.fft[0].forward(t.x)
	ch := 0
	emit := func(spec []complex128, res int) {
		t.lowpass(dst, ch, spec, res)
		ch++
	}
	emit(t.x, 0)
	L := t.l
	for j1 := 0; j1 < t.j; j1++ {
		for t1 := 0; t1 < L; t1++ {
			// U1 = |x * psi_{j1,t1}| at resolution j1.
			t.modulus(t.u1, t.x, 0, t.psi[0][j1*L+t1], j1)
			emit(t.u1, j1)
			for j2 := j1 + 1; j2 < t.j; j2++ {
				for t2 := 0; t2 < L; t2++ {
					t.modulus(t.u2, t.u1, j1, t.psi[j1][j2*L+t2], j2)
					emit(t.u2, j2)
				}
			}
		}
	}
	for i, v := range dst {
		if math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) {
			return fmt.Errorf("%w: feature %d overflows float32 (pixels too large)", ErrSize, i)
		}
	}
	t.normalise(dst)
	return nil
}

// modulus writes into dst the spectrum, at resolution to, of
// |IFFT(src . filt)| where src and filt are at resolution from.
func (t *Transform) modulus(dst, src []complex128, from int, filt []complex128, to int) {
	m := t.n >> from
	y := t.y[:m*m]
	for i := range y {
		y[i] = src[i] * filt[i]
	}
	k := to - from
	mo := m >> k
	out := dst[:mo*mo]
	periodise(out, y, m, k)
	t.fft[to].inverse(out)
	scale := 1 / float64(mo*mo)
	for i, v := range out {
		out[i] = complex(cmplx.Abs(v)*scale, 0)
	}
	t.fft[to].forward(out)
}

// lowpass writes channel ch of dst: (spec . phi) at resolution res,
// periodised to resolution J, inverse-transformed, cropped to the image.
func (t *Transform) lowpass(dst []float32, ch int, spec []complex128, res int) {
	m := t.n >> res
	y := t.y[:m*m]
	phi := t.phi[res]
	for i := range y {
		y[i] = spec[i] * phi[i]
	}
	k := t.j - res
	mo := m >> k
	// The tail of u2: spec (at most (n/2)^2 values at u2's head when it
	// is u2) never reaches it.
	out := t.u2[len(t.u2)-mo*mo:]
	periodise(out, y, m, k)
	t.fft[t.j].inverse(out)
	side := t.Side()
	// The first output sample on the image: the padded row 2^J k with
	// 2^J k >= pad, i.e. k = ceil(pad / 2^J).
	off := (t.pad + 1<<t.j - 1) >> t.j
	scale := 1 / float64(mo*mo)
	base := ch * side * side
	for r := 0; r < side; r++ {
		for c := 0; c < side; c++ {
			dst[base+r*side+c] = float32(real(out[(r+off)*mo+c+off]) * scale)
		}
	}
}

// normalise scales each group of channels of dst to mean 0 and variance
// 1 over its own values (nothing else is read).
func (t *Transform) normalise(dst []float32) {
	if t.groups == 0 {
		return
	}
	per := len(dst) / t.groups
	for g := 0; g < t.groups; g++ {
		v := dst[g*per : (g+1)*per]
		var mean float64
		for _, x := range v {
			mean += float64(x)
		}
		mean /= float64(per)
		var ss float64
		for _, x := range v {
			d := float64(x) - mean
			ss += d * d
		}
		inv := 1 / math.Sqrt(ss/float64(per)+1e-10)
		for i, x := range v {
			v[i] = float32((float64(x) - mean) * inv)
		}
	}
}

// periodise writes into out (side m >> k) the spectrum of the signal of
// spectrum in (side m) subsampled by 2^k in space: the mean of the 4^k
// aliases of each frequency.
func periodise(out, in []complex128, m, k int) {
	if k == 0 {
		copy(out, in)
		return
	}
	mo := m >> k
	f := 1 << k
	scale := complex(1/float64(f*f), 0)
	for u := 0; u < mo; u++ {
		for v := 0; v < mo; v++ {
			var s complex128
			for a := 0; a < f; a++ {
				row := (u + a*mo) * m
				for b := 0; b < f; b++ {
					s += in[row+v+b*mo]
				}
			}
			out[u*mo+v] = s * scale
		}
	}
}

// crop returns a filter spectrum (side n) at resolution r (side n >> r):
// its values at the frequencies that resolution represents, the band
// |u| < n / 2^(r+1) (Kymatio's periodize_filter_fft keeps the same band).
func crop(f []float64, n, r int) []complex128 {
	m := n >> r
	out := make([]complex128, m*m)
	if r == 0 {
		for i, v := range f {
			out[i] = complex(v, 0)
		}
		return out
	}
	idx := func(u int) int { // frequency index at side m -> at side n
		if u < m/2 {
			return u
		}
		return n - (m - u)
	}
	for u := 0; u < m; u++ {
		for v := 0; v < m; v++ {
			out[u*m+v] = complex(f[idx(u)*n+idx(v)], 0)
		}
	}
	return out
}

func realPart(a []complex128) []float64 {
	out := make([]float64, len(a))
	for i, v := range a {
		out[i] = real(v)
	}
	return out
}

// gabor writes into dst (side n, periodised over the neighbouring copies)
// the Gabor filter of scale sigma, angle theta, frequency xi and slant.
func gabor(dst []complex128, n int, sigma, theta, xi, slant float64) {
	clear(dst)
	c, s := math.Cos(theta), math.Sin(theta)
	// curv = R diag(1, slant^2) R^T / (2 sigma^2)
	a := (c*c + slant*slant*s*s) / (2 * sigma * sigma)
	b := (c*s - slant*slant*c*s) / (2 * sigma * sigma)
	d := (s*s + slant*slant*c*c) / (2 * sigma * sigma)
	norm := slant / (2 * math.Pi * sigma * sigma)
	for ex := -2; ex <= 2; ex++ {
		for ey := -2; ey <= 2; ey++ {
			for r := 0; r < n; r++ {
				x := float64(r - n/2 + ex*n)
				for q := 0; q < n; q++ {
					y := float64(q - n/2 + ey*n)
					e := math.Exp(-(a*x*x + 2*b*x*y + d*y*y))
					ph := xi * (x*c + y*s)
					// centre the filter at index 0 (periodic)
					i := ((r+n/2)%n)*n + (q+n/2)%n
					dst[i] += complex(e*math.Cos(ph)*norm, e*math.Sin(ph)*norm)
				}
			}
		}
	}
}

// morlet writes a Morlet filter: a Gabor filter minus a multiple of its
// envelope, so that it sums to zero.
func morlet(dst []complex128, n int, sigma, theta, xi, slant float64) {
	env := make([]complex128, len(dst))
	gabor(env, n, sigma, theta, 0, slant)
	gabor(dst, n, sigma, theta, xi, slant)
	var sg, se complex128
	for i := range dst {
		sg += dst[i]
		se += env[i]
	}
	k := sg / se
	for i := range dst {
		dst[i] -= k * env[i]
	}
}

// fft2 is a 2-D FFT of side n (unnormalised both ways).
type fft2 struct {
	n   int
	f   *fourier.CmplxFFT
	col []complex128
}

func newFFT2(n int) *fft2 {
	return &fft2{n: n, f: fourier.NewCmplxFFT(n), col: make([]complex128, n)}
}

func (p *fft2) forward(a []complex128) { p.apply(a, false) }
func (p *fft2) inverse(a []complex128) { p.apply(a, true) }

func (p *fft2) apply(a []complex128, inv bool) {
	n := p.n
	do := p.f.Coefficients
	if inv {
		do = p.f.Sequence
	}
	for r := 0; r < n; r++ {
		row := a[r*n : (r+1)*n]
		do(row, row)
	}
	for c := 0; c < n; c++ {
		for r := 0; r < n; r++ {
			p.col[r] = a[r*n+c]
		}
		do(p.col, p.col)
		for r := 0; r < n; r++ {
			a[r*n+c] = p.col[r]
		}
	}
}
