package scatter

import (
	"errors"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"
)

// image returns a deterministic test picture: a bright bar and a blob on
// a dark background, with some texture.
func image(seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	img := make([]float32, 28*28)
	for r := 6; r < 22; r++ {
		for c := 10; c < 14; c++ {
			img[r*28+c] = 0.9
		}
	}
	for r := 0; r < 28; r++ {
		for c := 0; c < 28; c++ {
			d := math.Hypot(float64(r)-18, float64(c)-19)
			img[r*28+c] += float32(0.6*math.Exp(-d*d/8) + 0.05*rng.Float64())
		}
	}
	return img
}

func TestShape(t *testing.T) {
	for _, tc := range []struct {
		c              Config
		channels, side int
	}{
		{DefaultConfig, 81, 7},
		{Config{Size: 28, J: 1, L: 4}, 5, 14},
		{Config{Size: 32, J: 3, L: 4}, 1 + 12 + 48, 4},
	} {
		tr, err := New(tc.c)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Channels() != tc.channels || tr.Side() != tc.side || tr.Dim() != tc.channels*tc.side*tc.side {
			t.Errorf("%+v: %d channels of side %d, want %d of %d", tc.c, tr.Channels(), tr.Side(), tc.channels, tc.side)
		}
	}
	for _, bad := range []Config{{Size: 30, J: 2, L: 8}, {Size: 28, J: 0, L: 8}, {Size: 28, J: 2, L: 8, Groups: 4}} {
		if _, err := New(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestFilters: the low-pass filter keeps the mean (its spectrum is 1 at
// frequency 0) and every wavelet removes it (0 at frequency 0, by the
// Morlet correction), and each wavelet's spectrum peaks near its
// frequency 3 pi / 4 / 2^j.
func TestFilters(t *testing.T) {
	tr, err := New(DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	if v := tr.phi[0][0]; math.Abs(real(v)-1) > 1e-9 {
		t.Errorf("phi at frequency 0 = %v, want 1", v)
	}
	n := tr.n
	for k, f := range tr.psi[0] {
		if a := cmplx.Abs(f[0]); a > 1e-9 {
			t.Errorf("psi %d at frequency 0 = %v, want 0", k, a)
		}
		best, at := 0.0, 0
		for i, v := range f {
			if real(v) > best {
				best, at = real(v), i
			}
		}
		u, w := at/n, at%n
		if u > n/2 {
			u -= n
		}
		if w > n/2 {
			w -= n
		}
		radius := 2 * math.Pi * math.Hypot(float64(u), float64(w)) / float64(n)
		j := k / tr.l
		want := 3 * math.Pi / 4 / float64(int(1)<<j)
		if math.Abs(radius-want) > 0.5*want {
			t.Errorf("psi %d (j = %d) peaks at radial frequency %.3f, want about %.3f", k, j, radius, want)
		}
	}
}

// TestHomogeneous: without normalisation the transform is positively
// homogeneous (S(a x) = a S(x) for a > 0: convolutions are linear and the
// modulus is homogeneous); with it, the features do not change when the
// picture is made brighter.
func TestHomogeneous(t *testing.T) {
	img := image(1)
	bright := make([]float32, len(img))
	for i, v := range img {
		bright[i] = 2 * v
	}
	raw, _ := New(Config{Size: 28, J: 2, L: 8})
	a, b := make([]float32, raw.Dim()), make([]float32, raw.Dim())
	if err := raw.Apply(a, img); err != nil {
		t.Fatal(err)
	}
	if err := raw.Apply(b, bright); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if math.Abs(float64(b[i])-2*float64(a[i])) > 1e-5*(1+math.Abs(float64(a[i]))) {
			t.Fatalf("feature %d: S(2x) = %v, 2 S(x) = %v", i, b[i], 2*a[i])
		}
	}
	norm, _ := New(DefaultConfig)
	if err := norm.Apply(a, img); err != nil {
		t.Fatal(err)
	}
	if err := norm.Apply(b, bright); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if math.Abs(float64(b[i]-a[i])) > 1e-3 {
			t.Fatalf("feature %d changes with brightness: %v vs %v", i, a[i], b[i])
		}
	}
}

// TestOnlyItsOwnImage: an image's features depend on that image alone:
// they are the same whatever was transformed before (no state carries
// over, so no other picture's data can enter), and each group is
// normalised to mean 0 and variance 1 over its own values.
func TestOnlyItsOwnImage(t *testing.T) {
	tr, err := New(DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]float32, tr.Dim())
	if err := tr.Apply(first, image(1)); err != nil {
		t.Fatal(err)
	}
	other := make([]float32, tr.Dim())
	for s := uint64(2); s < 5; s++ {
		if err := tr.Apply(other, image(s)); err != nil {
			t.Fatal(err)
		}
	}
	again := make([]float32, tr.Dim())
	if err := tr.Apply(again, image(1)); err != nil {
		t.Fatal(err)
	}
	fresh, _ := New(DefaultConfig)
	alone := make([]float32, tr.Dim())
	if err := fresh.Apply(alone, image(1)); err != nil {
		t.Fatal(err)
	}
	for i := range first {
		if first[i] != again[i] || first[i] != alone[i] {
			t.Fatalf("feature %d: %v, %v after other images, %v from a fresh transform", i, first[i], again[i], alone[i])
		}
	}
	per := tr.Dim() / DefaultConfig.Groups
	for g := 0; g < DefaultConfig.Groups; g++ {
		var m, v float64
		for _, x := range first[g*per : (g+1)*per] {
			m += float64(x)
		}
		m /= float64(per)
		for _, x := range first[g*per : (g+1)*per] {
			v += (float64(x) - m) * (float64(x) - m)
		}
		v /= float64(per)
		if math.Abs(m) > 1e-5 || math.Abs(v-1) > 1e-4 {
			t.Fatalf("group %d: mean %v, variance %v; want 0, 1", g, m, v)
		}
	}
}

// TestStableToShifts: moving the picture by one pixel changes its
// scattering features (order 0 and 1, before normalisation) far less
// than its pixels, relative to their norms: the low-pass filter averages
// over 2^J pixels (Mallat 2012's stability).
func TestStableToShifts(t *testing.T) {
	tr, _ := New(Config{Size: 28, J: 2, L: 8})
	img := image(3)
	shifted := make([]float32, len(img))
	for r := 0; r < 28; r++ {
		for c := 1; c < 28; c++ {
			shifted[r*28+c] = img[r*28+c-1]
		}
	}
	rel := func(a, b []float32) float64 {
		var d, n float64
		for i := range a {
			d += float64(a[i]-b[i]) * float64(a[i]-b[i])
			n += float64(a[i]) * float64(a[i])
		}
		return math.Sqrt(d / n)
	}
	a, b := make([]float32, tr.Dim()), make([]float32, tr.Dim())
	tr.Apply(a, img)
	tr.Apply(b, shifted)
	k := 17 * 49 // orders 0 and 1
	pix, feat := rel(img, shifted), rel(a[:k], b[:k])
	t.Logf("one-pixel shift: pixels change by %.3f, features by %.3f (relative)", pix, feat)
	if !(feat < pix/2) {
		t.Errorf("features change by %.3f, pixels by %.3f: want under half", feat, pix)
	}
}

func TestRefusesBadInput(t *testing.T) {
	tr, _ := New(DefaultConfig)
	dst := make([]float32, tr.Dim())
	img := image(1)
	img[5] = float32(math.NaN())
	if err := tr.Apply(dst, img); !errors.Is(err, ErrSize) {
		t.Errorf("NaN pixel: err = %v", err)
	}
	if err := tr.Apply(dst, make([]float32, 27*28)); !errors.Is(err, ErrSize) {
		t.Errorf("short image: err = %v", err)
	}
	if err := tr.Apply(dst[:10], image(1)); !errors.Is(err, ErrSize) {
		t.Errorf("short dst: err = %v", err)
	}
}

func BenchmarkApply(b *testing.B) {
	tr, _ := New(DefaultConfig)
	dst := make([]float32, tr.Dim())
	img := image(1)
	for b.Loop() {
		tr.Apply(dst, img)
	}
}
