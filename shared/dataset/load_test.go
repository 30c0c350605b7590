package dataset

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func tinyIDX() (images, labels *IDX) {
	// Three 2x2 images whose pixels are 0, 51, 255, ... and labels 2, 0, 1.
	images = &IDX{Type: Uint8, Dims: []int{3, 2, 2}, Data: []byte{0, 51, 255, 1, 2, 3, 4, 5, 254, 128, 127, 0}}
	labels = &IDX{Type: Uint8, Dims: []int{3}, Data: []byte{2, 0, 1}}
	return images, labels
}

func TestFromIDX(t *testing.T) {
	images, labels := tinyIDX()
	s, err := FromIDX("tiny", images, labels, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 3 || s.Features != 4 || s.Classes != 3 || len(s.Shape) != 2 || s.Shape[0] != 2 || s.Shape[1] != 2 {
		t.Fatalf("set = %d samples, %d features, %d classes, shape %v", s.Len(), s.Features, s.Classes, s.Shape)
	}
	for i, x := range s.Samples {
		if x.Label != int(labels.Data[i]) {
			t.Errorf("sample %d label = %d, want %d", i, x.Label, labels.Data[i])
		}
		for j, v := range x.X {
			// float32(b)/255 as the loader computes it; 51/255 = 0.2.
			want := float32(images.Data[4*i+j]) / 255
			if diff := v - want; diff > 1e-7 || diff < -1e-7 || v < 0 || v > 1 {
				t.Errorf("sample %d pixel %d = %v, want %v", i, j, v, want)
			}
		}
	}
	if s.Samples[0].X[1] != float32(0.2) || s.Samples[0].X[2] != 1 {
		t.Errorf("pixels 51 and 255 became %v and %v, want 0.2 and 1", s.Samples[0].X[1], s.Samples[0].X[2])
	}
	// EncodeIDX inverts FromIDX exactly.
	im2, lab2, err := s.EncodeIDX()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(im2.Data, images.Data) || !bytes.Equal(lab2.Data, labels.Data) {
		t.Errorf("EncodeIDX = %v, %v, want %v, %v", im2.Data, lab2.Data, images.Data, labels.Data)
	}
	if len(im2.Dims) != 3 || im2.Dims[0] != 3 || im2.Dims[1] != 2 || im2.Dims[2] != 2 {
		t.Errorf("EncodeIDX dims = %v, want [3 2 2]", im2.Dims)
	}
}

// TestEncodeIDXAllBytes checks round(255 * float32(b)/255) == b for every
// byte, the property EncodeIDX's exactness rests on.
func TestEncodeIDXAllBytes(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	labels := &IDX{Type: Uint8, Dims: []int{1}, Data: []byte{0}}
	s, err := FromIDX("all", &IDX{Type: Uint8, Dims: []int{1, 256}, Data: all}, labels, 1)
	if err != nil {
		t.Fatal(err)
	}
	im, _, err := s.EncodeIDX()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(im.Data, all) {
		t.Errorf("bytes did not survive the round trip: %v", im.Data)
	}
}

func TestFromIDXErrors(t *testing.T) {
	im, lab := tinyIDX()
	tests := []struct {
		name    string
		images  *IDX
		labels  *IDX
		classes int
		want    string
	}{
		{"nil", nil, lab, 3, "nil IDX"},
		{"count mismatch", im, &IDX{Type: Uint8, Dims: []int{2}, Data: []byte{0, 1}}, 3, "3 images but 2 labels"},
		{"label out of range", im, lab, 2, "label 2 of sample 0 (labels file byte 8)"},
		{"zero classes", im, lab, 0, "classes = 0"},
		{"float images", &IDX{Type: Float32, Dims: []int{3, 1}, Data: make([]byte, 12)}, lab, 3, "want uint8"},
		{"1-d images", &IDX{Type: Uint8, Dims: []int{3}, Data: []byte{1, 2, 3}}, lab, 3, "want [n, features...]"},
		{"2-d labels", im, &IDX{Type: Uint8, Dims: []int{3, 1}, Data: []byte{0, 1, 2}}, 3, "want [n]"},
		{"short payload", &IDX{Type: Uint8, Dims: []int{3, 2, 2}, Data: []byte{1}}, lab, 3, "payload bytes"},
		{"zero features", &IDX{Type: Uint8, Dims: []int{3, 0}}, lab, 3, "zero features"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromIDX("x", tc.images, tc.labels, tc.classes)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestEncodeIDXRejects(t *testing.T) {
	tests := []struct {
		name string
		s    Set
		want string
	}{
		{"above one", Set{Name: "a", Features: 1, Classes: 1, Samples: []Sample{{X: []float32{1.5}}}}, "outside [0, 1]"},
		{"negative", Set{Name: "a", Features: 1, Classes: 1, Samples: []Sample{{X: []float32{-0.1}}}}, "outside [0, 1]"},
		{"bad label", Set{Name: "a", Features: 1, Classes: 1, Samples: []Sample{{X: []float32{0}, Label: 1}}}, "label 1"},
		{"too many classes", Set{Name: "a", Features: 1, Classes: 300}, "300 classes"},
		{"bad shape", Set{Name: "a", Features: 4, Classes: 1, Shape: []int{3}}, "shape [3]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tc.s.EncodeIDX()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestSubsetTake(t *testing.T) {
	im, lab := tinyIDX()
	s, err := FromIDX("tiny", im, lab, 3)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := s.Subset([]int{2, 0, 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := sub.Labels(); len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 1 {
		t.Errorf("subset labels = %v, want [1 2 1]", got)
	}
	if _, err := s.Subset([]int{0, 3}); err == nil {
		t.Error("Subset with index 3 of 3: no error")
	}
	if _, err := s.Subset([]int{-1}); err == nil {
		t.Error("Subset with index -1: no error")
	}
	for _, tc := range []struct{ n, want int }{{0, 0}, {2, 2}, {3, 3}, {10, 3}} {
		got, err := s.Take(tc.n)
		if err != nil || got.Len() != tc.want {
			t.Errorf("Take(%d) = %d samples, %v; want %d", tc.n, got.Len(), err, tc.want)
		}
	}
	if _, err := s.Take(-1); err == nil {
		t.Error("Take(-1): no error")
	}
	if got := s.ClassCounts(); len(got) != 3 || got[0] != 1 || got[1] != 1 || got[2] != 1 {
		t.Errorf("class counts = %v, want [1 1 1]", got)
	}
}

// writeDir writes the tiny set as train and test files in dir, gzipped or
// raw.
func writeDir(t *testing.T, dir string, zipped bool) {
	t.Helper()
	im, lab := tinyIDX()
	for _, f := range []struct {
		name string
		x    *IDX
	}{{TrainImagesFile, im}, {TrainLabelsFile, lab}, {TestImagesFile, im}, {TestLabelsFile, lab}} {
		var buf bytes.Buffer
		name := f.name
		if zipped {
			zw := gzip.NewWriter(&buf)
			if err := WriteIDX(zw, f.x); err != nil {
				t.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			name += ".gz"
		} else if err := WriteIDX(&buf, f.x); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadMNISTDir(t *testing.T) {
	for _, zipped := range []bool{true, false} {
		dir := t.TempDir()
		writeDir(t, dir, zipped)
		train, test, err := LoadMNIST(dir)
		if err != nil {
			t.Fatalf("gzip=%v: %v", zipped, err)
		}
		if train.Name != "mnist/train" || test.Name != "mnist/test" || train.Len() != 3 || test.Len() != 3 || train.Classes != 10 {
			t.Errorf("gzip=%v: got %q (%d), %q (%d), %d classes", zipped, train.Name, train.Len(), test.Name, test.Len(), train.Classes)
		}
	}
	_, _, err := LoadMNIST(t.TempDir())
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "scripts/mnist.sh") {
		t.Errorf("empty dir: err = %v, want not-exist naming scripts/mnist.sh", err)
	}
	_, _, err = LoadFashionMNIST(t.TempDir())
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "make setup") {
		t.Errorf("empty dir: err = %v, want not-exist naming make setup", err)
	}
	// A corrupt file is reported with its path, not as missing.
	dir := t.TempDir()
	writeDir(t, dir, true)
	bad := filepath.Join(dir, TestLabelsFile+".gz")
	if err := os.WriteFile(bad, []byte{0x1f, 0x8b, 1}, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = LoadMNIST(dir)
	var ie *IDXError
	if !errors.As(err, &ie) || ie.Name != bad {
		t.Errorf("corrupt file: err = %v, want an *IDXError naming %s", err, bad)
	}
}

// TestLoadFashionMNIST loads the real dataset installed by `make setup`
// (Debian package dataset-fashion-mnist). The published dataset has 6,000
// training and 1,000 test images of each of its 10 classes.
func TestLoadFashionMNIST(t *testing.T) {
	if _, err := os.Stat(filepath.Join(DefaultFashionMNISTDir, TrainImagesFile+".gz")); err != nil {
		t.Fatalf("Fashion-MNIST is not installed (%v): run `make setup` (installs the Debian package dataset-fashion-mnist)", err)
	}
	train, test, err := LoadFashionMNIST(DefaultFashionMNISTDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s        Set
		name     string
		n, class int
	}{{train, "fashion-mnist/train", 60000, 6000}, {test, "fashion-mnist/test", 10000, 1000}} {
		if tc.s.Name != tc.name || tc.s.Len() != tc.n || tc.s.Features != 784 || tc.s.Classes != 10 {
			t.Errorf("%s: %d samples, %d features, %d classes; want %d, 784, 10", tc.s.Name, tc.s.Len(), tc.s.Features, tc.s.Classes, tc.n)
		}
		if len(tc.s.Shape) != 2 || tc.s.Shape[0] != 28 || tc.s.Shape[1] != 28 {
			t.Errorf("%s: shape %v, want [28 28]", tc.name, tc.s.Shape)
		}
		if err := tc.s.Validate(); err != nil {
			t.Error(err)
		}
		for c, k := range tc.s.ClassCounts() {
			if k != tc.class {
				t.Errorf("%s: class %d has %d samples, want %d", tc.name, c, k, tc.class)
			}
		}
	}
	// The first 100 test images encode back to the file's bytes.
	raw, err := LoadIDXFile(filepath.Join(DefaultFashionMNISTDir, TestImagesFile+".gz"))
	if err != nil {
		t.Fatal(err)
	}
	head, err := test.Take(100)
	if err != nil {
		t.Fatal(err)
	}
	im, _, err := head.EncodeIDX()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(im.Data, raw.Data[:100*784]) {
		t.Error("the first 100 test images do not encode back to the file's bytes")
	}
}

func BenchmarkLoadFashionMNISTTrain(b *testing.B) {
	dir := DefaultFashionMNISTDir
	for b.Loop() {
		s, err := loadPair(dir, "train", TrainImagesFile, TrainLabelsFile, 10, "")
		if err != nil {
			b.Fatal(err)
		}
		if s.Len() != 60000 {
			b.Fatalf("%d samples", s.Len())
		}
	}
}
