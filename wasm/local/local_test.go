package local

import (
	"bytes"
	"compress/gzip"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"testing"

	"browserfl/shared/dataset"
)

// testSet returns n samples with pixels drawn from a fixed seed, each
// pixel a multiple of 1/255 so an IDX round trip is exact.
func testSet(n int, seed uint64) dataset.Set {
	r := rand.New(rand.NewPCG(seed, 1))
	s := Empty("t")
	for i := 0; i < n; i++ {
		x := make([]float32, Features)
		for j := range x {
			x[j] = float32(r.IntN(256)) / 255
		}
		s.Samples = append(s.Samples, dataset.Sample{X: x, Label: i % Classes})
	}
	return s
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	s := testSet(13, 7)
	im, lab, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode("t", im, lab)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Samples) != len(s.Samples) {
		t.Fatalf("decoded %d samples, want %d", len(got.Samples), len(s.Samples))
	}
	for i := range s.Samples {
		if got.Samples[i].Label != s.Samples[i].Label {
			t.Fatalf("sample %d: label %d, want %d", i, got.Samples[i].Label, s.Samples[i].Label)
		}
		for j, v := range s.Samples[i].X {
			if got.Samples[i].X[j] != v {
				t.Fatalf("sample %d pixel %d: %v, want %v", i, j, got.Samples[i].X[j], v)
			}
		}
	}
}

func pngBytes(t *testing.T, w, h int, bg, ink uint8) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := bg
			if x >= w/4 && x < w/2 { // a vertical bar in the left half
				c = ink
			}
			img.SetGray(x, y, color.Gray{Y: c})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestParse(t *testing.T) {
	s := testSet(5, 3)
	im, lab, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(im)
	zw.Close()
	tests := []struct {
		name    string
		files   []File
		want    int // samples; -1 means an error is expected
		wantLbl int // label of the first sample when want > 0
	}{
		{"idx pair", []File{{"imgs", im}, {"labs", lab}}, 5, 0},
		{"gzipped images", []File{{"labs", lab}, {"imgs.gz", gz.Bytes()}}, 5, 0},
		{"png dark ink on white", []File{{"7_seven.png", pngBytes(t, 56, 56, 255, 0)}}, 1, 7},
		{"png light ink on black", []File{{"dir/3-x.png", pngBytes(t, 28, 28, 0, 255)}}, 1, 3},
		{"images without labels", []File{{"imgs", im}}, -1, 0},
		{"labels without images", []File{{"labs", lab}}, -1, 0},
		{"unlabelled image name", []File{{"cat.png", pngBytes(t, 28, 28, 0, 255)}}, -1, 0},
		{"garbage", []File{{"1_x.png", []byte("not an image")}}, -1, 0},
		{"truncated idx", []File{{"imgs", im[:100]}, {"labs", lab}}, -1, 0},
		{"nothing", nil, -1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Parse(tc.files)
			if tc.want < 0 {
				if err == nil {
					t.Fatalf("Parse succeeded with %d samples, want an error", len(res.Set.Samples))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Set.Samples) != tc.want {
				t.Fatalf("%d samples, want %d", len(res.Set.Samples), tc.want)
			}
			if err := res.Set.Validate(); err != nil {
				t.Fatal(err)
			}
			if res.Set.Samples[0].Label != tc.wantLbl {
				t.Fatalf("label %d, want %d", res.Set.Samples[0].Label, tc.wantLbl)
			}
		})
	}
}

func TestFromImageInvertsPaper(t *testing.T) {
	// Dark ink (0) on white (255): after conversion the bar (columns 7..13
	// of 28) must be bright and the background dark.
	img, _, err := image.Decode(bytes.NewReader(pngBytes(t, 56, 56, 255, 0)))
	if err != nil {
		t.Fatal(err)
	}
	x := FromImage(img)
	if x[10] != 1 || x[20] != 0 {
		t.Fatalf("bar pixel %v, background pixel %v; want 1 and 0", x[10], x[20])
	}
}

func TestFromRGBA(t *testing.T) {
	// 28x28: pixel 5 of the first row inked.
	rgba := make([]byte, Features*4)
	rgba[4*5] = 255
	x, err := FromRGBA(rgba, Side, Side)
	if err != nil {
		t.Fatal(err)
	}
	if x[5] != 1 || Blank(x) {
		t.Fatalf("pixel 5 = %v, blank = %v", x[5], Blank(x))
	}
	// A 300x150 canvas (the default bitmap) with its left half inked:
	// target columns 0..13 are fully inked, 14..27 empty (300/28 boxes
	// split at x = 150 exactly between columns 13 and 14).
	w, h := 300, 150
	big := make([]byte, w*h*4)
	for y := 0; y < h; y++ {
		for xx := 0; xx < w/2; xx++ {
			big[4*(y*w+xx)] = 255
		}
	}
	x, err = FromRGBA(big, w, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		i    int
		want float32
	}{{0, 1}, {13, 1}, {14, 0}, {27*Side + 13, 1}, {27*Side + 27, 0}} {
		if x[c.i] != c.want {
			t.Errorf("feature %d = %v, want %v", c.i, x[c.i], c.want)
		}
	}
	if _, err := FromRGBA(rgba[:10], Side, Side); err == nil {
		t.Fatal("short buffer accepted")
	}
	if _, err := FromRGBA(rgba, 10, 10); err == nil {
		t.Fatal("canvas below 28x28 accepted")
	}
}

func TestShuffleIsAPermutation(t *testing.T) {
	s := testSet(50, 9)
	before := map[float32]int{}
	for _, smp := range s.Samples {
		before[smp.X[0]+float32(smp.Label)*1000]++
	}
	Shuffle(s, [32]byte{1})
	moved := 0
	ref := testSet(50, 9)
	for i, smp := range s.Samples {
		before[smp.X[0]+float32(smp.Label)*1000]--
		if smp.X[0] != ref.Samples[i].X[0] {
			moved++
		}
	}
	for k, n := range before {
		if n != 0 {
			t.Fatalf("sample %v count changed by %d", k, -n)
		}
	}
	// A uniform permutation of 50 leaves about one element in place; 40
	// fixed points has probability far below 1e-30.
	if moved < 10 {
		t.Fatalf("only %d of 50 samples moved", moved)
	}
}
