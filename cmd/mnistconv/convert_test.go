package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"browserfl/shared/dataset"
)

// digitsJSON returns a <d>.json document in the package's format holding n
// images whose pixels are (d + image + 3*pixel) mod 256 divided by 255 and
// printed with three decimals, as the package prints them.
func digitsJSON(d, n int) string {
	var b strings.Builder
	b.WriteString(`{ "data": [`)
	for k := range n * imageSize {
		if k > 0 {
			b.WriteByte(',')
		}
		v := float64((d+k/imageSize+3*(k%imageSize))%256) / 255
		fmt.Fprintf(&b, "%.3f", v)
	}
	b.WriteString("]}\n")
	return b.String()
}

func TestParseDigitsInline(t *testing.T) {
	// One image: 0, then 0.2 (51/255), 1, 0.992 (253/255), 0.004 (1/255),
	// 0.502 (128/255), then zeros.
	pix := []string{"0", "0.2", "1", "0.992", "0.004", "0.502"}
	for len(pix) < imageSize {
		pix = append(pix, "0")
	}
	doc := `{ "data": [` + strings.Join(pix, ",") + `] }`
	got, err := parseDigits(strings.NewReader(doc), "inline")
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, imageSize)
	copy(want, []byte{0, 51, 255, 253, 1, 128})
	if !bytes.Equal(got, want) {
		t.Errorf("parsed %v..., want %v...", got[:8], want[:8])
	}
}

func TestParseDigitsGenerated(t *testing.T) {
	got, err := parseDigits(strings.NewReader(digitsJSON(4, 3)), "4.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3*imageSize {
		t.Fatalf("%d bytes, want %d", len(got), 3*imageSize)
	}
	for k, b := range got {
		if want := byte((4 + k/imageSize + 3*(k%imageSize)) % 256); b != want {
			t.Fatalf("byte %d = %d, want %d", k, b, want)
		}
	}
}

func TestParseDigitsErrors(t *testing.T) {
	zeros := strings.TrimSuffix(strings.Repeat("0,", imageSize), ",")
	tests := []struct {
		name, doc, want string
	}{
		{"not json", "hello", "parsing JSON"},
		{"no data", `{"other": [1]}`, `no "data" array`},
		{"empty data", `{"data": []}`, "positive multiple of 784"},
		{"short image", `{"data": [0, 1, 0.5]}`, "3 pixels"},
		{"above one", `{"data": [1.5,` + zeros[2:] + `]}`, "outside [0, 1]"},
		{"negative", `{"data": [-0.2,` + zeros[2:] + `]}`, "outside [0, 1]"},
		{"not a byte", `{"data": [0.5,` + zeros[2:] + `]}`, "not a byte divided by 255"},
		{"string pixel", `{"data": ["0",` + zeros[2:] + `]}`, "parsing JSON"},
		{"trailing", `{"data": [` + zeros + `]} {}`, "after the JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseDigits(strings.NewReader(tc.doc), "x.json")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "x.json") {
				t.Errorf("err = %v, want one naming x.json and containing %q", err, tc.want)
			}
		})
	}
}

// TestConvert runs the whole conversion on a fake package of 10 classes
// with 5 to 14 images each and loads the result with dataset.LoadMNIST.
func TestConvert(t *testing.T) {
	src := t.TempDir()
	digits := filepath.Join(src, "src", "digits")
	if err := os.MkdirAll(digits, 0o755); err != nil {
		t.Fatal(err)
	}
	wantTrain, wantTest := make([]int, classes), make([]int, classes)
	for d := range classes {
		n := 5 + d
		if err := os.WriteFile(filepath.Join(digits, fmt.Sprintf("%d.json", d)), []byte(digitsJSON(d, n)), 0o644); err != nil {
			t.Fatal(err)
		}
		// round(0.8 n): n = 5..14 gives 4, 5, 6, 6, 7, 8, 9, 10, 10, 11.
		wantTrain[d] = int(0.8*float64(n) + 0.5)
		wantTest[d] = n - wantTrain[d]
	}
	out := filepath.Join(t.TempDir(), "mnist")
	nTrain, nTest, err := convert(options{src: src, out: out, trainFrac: 0.8, seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	train, test, err := dataset.LoadMNIST(out)
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != nTrain || test.Len() != nTest || nTrain+nTest != 95 {
		t.Fatalf("loaded %d + %d, convert said %d + %d, want 95 in all", train.Len(), test.Len(), nTrain, nTest)
	}
	for _, c := range []struct {
		s    dataset.Set
		want []int
	}{{train, wantTrain}, {test, wantTest}} {
		if got := c.s.ClassCounts(); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s class counts %v, want %v", c.s.Name, got, c.want)
		}
	}
	// Every image is one of its class's generated images: its first pixel
	// is (d + i) mod 256 for an image index i < n, and the rest follow.
	for _, s := range []dataset.Set{train, test} {
		im, _, err := s.EncodeIDX()
		if err != nil {
			t.Fatal(err)
		}
		for k, x := range s.Samples {
			img := im.Data[k*imageSize : (k+1)*imageSize]
			i := int(img[0]) - x.Label
			if i < 0 || i >= 5+x.Label {
				t.Fatalf("%s sample %d (label %d) starts with %d, not an image of its class", s.Name, k, x.Label, img[0])
			}
			for p, b := range img {
				if want := byte((x.Label + i + 3*p) % 256); b != want {
					t.Fatalf("%s sample %d pixel %d = %d, want %d", s.Name, k, p, b, want)
				}
			}
		}
	}
	// The same seed writes the same bytes.
	out2 := filepath.Join(t.TempDir(), "again")
	if _, _, err := convert(options{src: src, out: out2, trainFrac: 0.8, seed: 1}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{dataset.TrainImagesFile, dataset.TestLabelsFile} {
		a, errA := os.ReadFile(filepath.Join(out, f+".gz"))
		b, errB := os.ReadFile(filepath.Join(out2, f+".gz"))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs with seed 1 (%v, %v)", f, errA, errB)
		}
	}
}

func TestConvertErrors(t *testing.T) {
	if _, _, err := convert(options{src: t.TempDir(), out: t.TempDir(), trainFrac: 0.8}); err == nil || !strings.Contains(err.Error(), "0.json") {
		t.Errorf("missing package: err = %v, want one naming 0.json", err)
	}
	if _, _, err := splitDigits(make([][]byte, classes), 1, 1); err == nil {
		t.Error("training fraction 1: no error")
	}
	one := make([][]byte, classes)
	for d := range one {
		one[d] = make([]byte, 3*imageSize)
	}
	if _, _, err := splitDigits(one, 0.0001, 1); err == nil || !strings.Contains(err.Error(), "0 training") {
		t.Errorf("a fraction that leaves no training digit: err = %v", err)
	}
	if err := run([]string{"-out", t.TempDir()}); err == nil {
		t.Error("run without -src: no error")
	}
}
