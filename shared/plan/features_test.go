package plan

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/scatter"
	"browserfl/shared/wire"
)

// featureSession is a private picture session whose model reads the
// scattering features.
func featureSession() wire.SessionParams {
	return wire.SessionParams{Name: "f", Dim: 39700, DeadlineMillis: 1000, Algorithm: "nc", Model: "logreg",
		Features: 3969, Classes: 10, M: 10, Cohort: 10, Rounds: 10, Batch: 8, Clip: 1, Eta: 0.1,
		Epsilon: 8, Delta: 1e-5, Transform: FeaturesScatter}
}

// TestSessionFeatures: the one reading of a session's Transform accepts
// no transform (nil: raw inputs) and a known one with its output
// dimension; it refuses an unknown kind (ErrUnknownFeatures), features
// of a row task and a dimension other than the transform's
// (ErrFeaturesMismatch).
func TestSessionFeatures(t *testing.T) {
	raw := featureSession()
	raw.Transform, raw.Features, raw.Dim = "", 784, 7850
	rows := featureSession()
	rows.Task = `{"schema":"browserfl.task/v1"}`
	wrongDim := featureSession()
	wrongDim.Features = 784
	unknown := featureSession()
	unknown.Transform = "wavelets"
	tests := []struct {
		name string
		s    wire.SessionParams
		want error // nil: accepted
		kind string
	}{
		{"raw pixels", raw, nil, ""},
		{"scatter", featureSession(), nil, FeaturesScatter},
		{"unknown kind", unknown, ErrUnknownFeatures, ""},
		{"features of rows", rows, ErrFeaturesMismatch, ""},
		{"pixels announced", wrongDim, ErrFeaturesMismatch, ""},
	}
	for _, tc := range tests {
		f, err := SessionFeatures(tc.s)
		switch {
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		case tc.want == nil && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want == nil && tc.kind == "" && f != nil:
			t.Errorf("%s: transform %q, want none", tc.name, f.Kind())
		case tc.want == nil && tc.kind != "" && (f == nil || f.Kind() != tc.kind || f.Dim() != tc.s.Features || f.Inputs() != 784):
			t.Errorf("%s: %+v, want %s reading 784 values and giving %d", tc.name, f, tc.kind, tc.s.Features)
		}
	}
	if err := wire.ValidateSession(featureSession()); err != nil {
		t.Errorf("the feature session fails wire's check: %v", err)
	}
	long := featureSession()
	long.Transform = strings.Repeat("s", wire.MaxTransformLen+1)
	if err := wire.ValidateSession(long); !errors.Is(err, wire.ErrBadFrame) {
		t.Errorf("a transform name of %d bytes: %v, want wire.ErrBadFrame", len(long.Transform), err)
	}
}

// TestFeaturesAreScatter: plan.Features computes exactly shared/scatter's
// features with the default configuration, picture by picture and in a
// set on several workers (the device's and the coordinator's path), and
// refuses a picture of the wrong size or with a value that is not finite.
func TestFeaturesAreScatter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]dataset.Sample, 5)
	for i := range data {
		x := make([]float32, 784)
		for k := range x {
			x[k] = rng.Float32()
		}
		data[i] = dataset.Sample{X: x, Label: i}
	}
	f, err := NewFeatures(FeaturesScatter)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := scatter.New(scatter.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	set, err := f.Samples(data, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range data {
		want := make([]float32, tr.Dim())
		if err := tr.Apply(want, s.X); err != nil {
			t.Fatal(err)
		}
		one, err := f.Picture(s.X)
		if err != nil {
			t.Fatal(err)
		}
		if set[i].Label != s.Label {
			t.Errorf("sample %d: label %d, want %d", i, set[i].Label, s.Label)
		}
		for k := range want {
			if one[k] != want[k] || set[i].X[k] != want[k] {
				t.Fatalf("sample %d feature %d: picture %v, set %v, scatter %v", i, k, one[k], set[i].X[k], want[k])
			}
		}
	}
	nan := append([]float32{}, data[0].X...)
	nan[5] = float32(math.NaN())
	for name, x := range map[string][]float32{"783 values": data[0].X[:783], "a NaN": nan} {
		if _, err := f.Picture(x); err == nil {
			t.Errorf("a picture with %s accepted", name)
		}
		if _, err := f.Samples([]dataset.Sample{{X: x}}, 1); err == nil {
			t.Errorf("a sample with %s accepted", name)
		}
	}
}

// featuresDigest is the SHA-256 of the float32 bits of the scattering
// features of goldenPictures, as computed natively on linux/amd64
// (2026-11-29). TestFeaturesSameEverywhere checks every platform
// against it: run natively and in WebAssembly under node (make
// test-wasm-features), it shows the page computes the devices' features
// bit for bit.
const featuresDigest = "0a0eb19b6f31c18c6ee94f209388ec6c95d13193e23ee7efaaa54152d1370536"

// goldenPictures are three pictures that any platform generates
// alike: PCG noise, a soft diagonal stroke (like a drawing) and a
// bright square on black.
func goldenPictures() [][]float32 {
	rng := rand.New(rand.NewPCG(26, 1))
	noise, stroke, square := make([]float32, 784), make([]float32, 784), make([]float32, 784)
	for r := range 28 {
		for c := range 28 {
			noise[r*28+c] = float32(rng.IntN(256)) / 255
			d := float64(r - c)
			stroke[r*28+c] = float32(math.Exp(-d * d / 8))
			if r >= 8 && r < 20 && c >= 8 && c < 20 {
				square[r*28+c] = 1
			}
		}
	}
	return [][]float32{noise, stroke, square}
}

// TestFeaturesSameEverywhere: the features of goldenPictures, one
// picture at a time (the page's drawings) and as a set on one or two
// workers (a device's pictures), hash to featuresDigest on every
// platform this test runs on.
func TestFeaturesSameEverywhere(t *testing.T) {
	f, err := NewFeatures(FeaturesScatter)
	if err != nil {
		t.Fatal(err)
	}
	pics := goldenPictures()
	one := sha256.New()
	var data []dataset.Sample
	for i, x := range pics {
		y, err := f.Picture(x)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range y {
			one.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)))
		}
		data = append(data, dataset.Sample{X: x, Label: i})
	}
	got := hex.EncodeToString(one.Sum(nil))
	if got != featuresDigest {
		t.Errorf("%s/%s: features of the golden pictures hash to %s, want %s (linux/amd64's)", runtime.GOOS, runtime.GOARCH, got, featuresDigest)
	}
	for _, workers := range []int{1, 2} {
		set, err := f.Samples(data, workers)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		for _, s := range set {
			for _, v := range s.X {
				h.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)))
			}
		}
		if s := hex.EncodeToString(h.Sum(nil)); s != got {
			t.Errorf("%d workers: the set's features hash to %s, one at a time to %s", workers, s, got)
		}
	}
}
