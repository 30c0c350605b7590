package local

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // register decoders for picked images
	_ "image/jpeg"
	_ "image/png"
	"math/rand/v2"
	"path"
	"sort"
	"strconv"

	"browserfl/shared/dataset"
)

// Side is the width and height of every image sample; Features = Side^2.
const (
	Side     = 28
	Features = Side * Side
	Classes  = 10
)

// File is a file the person picked: its name and its bytes.
type File struct {
	Name string
	Data []byte
}

// Result is what Parse produced: the samples and a line per file saying
// what was taken from it.
type Result struct {
	Set     dataset.Set
	Summary []string
}

// Empty returns an empty set with the page's shape.
func Empty(name string) dataset.Set {
	return dataset.Set{Name: name, Features: Features, Classes: Classes, Shape: []int{Side, Side}}
}

// Parse reads picked files. IDX files are paired by their first dimension
// (an images array [n, 28, 28] with a labels array [n]); image files
// (PNG, JPEG, GIF) take their label from the first character of the file
// name ("3_cat.png", "7-1.jpg"). Files of neither kind are an error.
func Parse(files []File) (Result, error) {
	res := Result{Set: Empty("files")}
	var imgs, labs []named
	for _, f := range files {
		if isIDX(f.Data) {
			x, err := dataset.ReadIDX(bytes.NewReader(f.Data), f.Name)
			if err != nil {
				return Result{}, fmt.Errorf("local: %s: %w", f.Name, err)
			}
			if len(x.Dims) == 1 {
				labs = append(labs, named{f.Name, x})
			} else {
				imgs = append(imgs, named{f.Name, x})
			}
			continue
		}
		s, err := imageSample(f)
		if err != nil {
			return Result{}, err
		}
		res.Set.Samples = append(res.Set.Samples, s)
		res.Summary = append(res.Summary, fmt.Sprintf("%s (label %d)", f.Name, s.Label))
	}
	for _, im := range imgs {
		n := im.x.Dims[0]
		j := -1
		for k, l := range labs {
			if l.x != nil && l.x.Dims[0] == n {
				j = k
				break
			}
		}
		if j < 0 {
			return Result{}, fmt.Errorf("local: %s: no labels file with %d entries was picked with it", im.name, n)
		}
		set, err := dataset.FromIDX(im.name, im.x, labs[j].x, Classes)
		if err != nil {
			return Result{}, fmt.Errorf("local: %s + %s: %w", im.name, labs[j].name, err)
		}
		if set.Features != Features {
			return Result{}, fmt.Errorf("local: %s: images have %d pixels, want %dx%d", im.name, set.Features, Side, Side)
		}
		labs[j].x = nil
		res.Set.Samples = append(res.Set.Samples, set.Samples...)
		res.Summary = append(res.Summary, fmt.Sprintf("%s + %s (%d samples)", path.Base(im.name), path.Base(labs[j].name), n))
	}
	for _, l := range labs {
		if l.x != nil {
			return Result{}, fmt.Errorf("local: %s: labels without a matching images file", l.name)
		}
	}
	if len(res.Set.Samples) == 0 {
		return Result{}, errors.New("local: no samples in the picked files")
	}
	return res, nil
}

type named struct {
	name string
	x    *dataset.IDX
}

// isIDX reports whether b starts like an IDX file (two zero bytes) or a
// gzip stream (1f 8b), which ReadIDX also accepts.
func isIDX(b []byte) bool {
	return len(b) >= 4 && ((b[0] == 0 && b[1] == 0) || (b[0] == 0x1f && b[1] == 0x8b))
}

func imageSample(f File) (dataset.Sample, error) {
	base := path.Base(f.Name)
	if base == "" || base[0] < '0' || base[0] > '9' {
		return dataset.Sample{}, fmt.Errorf("local: %s: neither an IDX file nor an image named <label>_<anything>", f.Name)
	}
	label, _ := strconv.Atoi(base[:1])
	img, _, err := image.Decode(bytes.NewReader(f.Data))
	if err != nil {
		return dataset.Sample{}, fmt.Errorf("local: %s: %w", f.Name, err)
	}
	return dataset.Sample{X: FromImage(img), Label: label}, nil
}

// FromImage converts any image to 28x28 features: grey levels averaged
// over each target pixel's source box, inverted when the image is
// mostly light (dark ink on white paper), so strokes are bright on dark as
// in MNIST.
func FromImage(img image.Image) []float32 {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	x := make([]float32, Features)
	if w == 0 || h == 0 {
		return x
	}
	var mean float64
	for ty := 0; ty < Side; ty++ {
		y0, y1 := b.Min.Y+ty*h/Side, b.Min.Y+(ty+1)*h/Side
		if y1 <= y0 {
			y1 = y0 + 1
		}
		for tx := 0; tx < Side; tx++ {
			x0, x1 := b.Min.X+tx*w/Side, b.Min.X+(tx+1)*w/Side
			if x1 <= x0 {
				x1 = x0 + 1
			}
			var sum float64
			for y := y0; y < y1; y++ {
				for xx := x0; xx < x1; xx++ {
					g := color.Gray16Model.Convert(img.At(xx, y)).(color.Gray16)
					sum += float64(g.Y) / 65535
				}
			}
			v := sum / float64((y1-y0)*(x1-x0))
			x[ty*Side+tx] = float32(v)
			mean += v
		}
	}
	if mean/Features > 0.5 {
		for i := range x {
			x[i] = 1 - x[i]
		}
	}
	return x
}

// FromRGBA converts canvas pixels (getImageData: RGBA bytes, row-major,
// w*h*4 of them, white strokes on black) to 28x28 features: the red
// channel averaged over each target pixel's box. The canvas may have any
// size of at least 28x28 (the page draws on the canvas's default bitmap,
// scaled, so that vugu's re-renders never reset it).
func FromRGBA(rgba []byte, w, h int) ([]float32, error) {
	if w < Side || h < Side || len(rgba) != w*h*4 {
		return nil, fmt.Errorf("local: canvas is %dx%d with %d bytes, want at least %dx%d RGBA", w, h, len(rgba), Side, Side)
	}
	x := make([]float32, Features)
	for ty := 0; ty < Side; ty++ {
		y0, y1 := ty*h/Side, (ty+1)*h/Side
		for tx := 0; tx < Side; tx++ {
			x0, x1 := tx*w/Side, (tx+1)*w/Side
			var sum int
			for y := y0; y < y1; y++ {
				for xx := x0; xx < x1; xx++ {
					sum += int(rgba[4*(y*w+xx)])
				}
			}
			x[ty*Side+tx] = float32(sum) / float32(255*(y1-y0)*(x1-x0))
		}
	}
	return x, nil
}

// Blank reports whether a drawing has no ink at all.
func Blank(x []float32) bool {
	for _, v := range x {
		if v > 0 {
			return false
		}
	}
	return true
}

// Encode stores a set as an IDX images array and an IDX labels array.
func Encode(s dataset.Set) (images, labels []byte, err error) {
	if len(s.Samples) == 0 {
		return nil, nil, errors.New("local: encoding an empty set")
	}
	if s.Shape == nil {
		s.Shape = []int{Side, Side}
	}
	im, lab, err := s.EncodeIDX()
	if err != nil {
		return nil, nil, fmt.Errorf("local: encoding %s: %w", s.Name, err)
	}
	var bi, bl bytes.Buffer
	if err := dataset.WriteIDX(&bi, im); err != nil {
		return nil, nil, fmt.Errorf("local: encoding %s: %w", s.Name, err)
	}
	if err := dataset.WriteIDX(&bl, lab); err != nil {
		return nil, nil, fmt.Errorf("local: encoding %s: %w", s.Name, err)
	}
	return bi.Bytes(), bl.Bytes(), nil
}

// Decode is the inverse of Encode.
func Decode(name string, images, labels []byte) (dataset.Set, error) {
	s, err := dataset.ReadSet(name, bytes.NewReader(images), bytes.NewReader(labels), Classes)
	if err != nil {
		return dataset.Set{}, fmt.Errorf("local: decoding %s: %w", name, err)
	}
	if s.Features != Features {
		return dataset.Set{}, fmt.Errorf("local: decoding %s: %d features, want %d", name, s.Features, Features)
	}
	return s, nil
}

// Counts returns the samples per label of s.
func Counts(s dataset.Set) [Classes]int {
	var c [Classes]int
	for _, smp := range s.Samples {
		if smp.Label >= 0 && smp.Label < Classes {
			c[smp.Label]++
		}
	}
	return c
}

// SortedSources returns "name (n)" for each source, sorted by name.
func SortedSources(n map[string]int) []string {
	var out []string
	for k, v := range n {
		out = append(out, fmt.Sprintf("%s (%d)", k, v))
	}
	sort.Strings(out)
	return out
}

// Join concatenates sets in order.
func Join(name string, sets ...dataset.Set) dataset.Set {
	out := Empty(name)
	for _, s := range sets {
		out.Samples = append(out.Samples, s.Samples...)
	}
	return out
}

// Shuffle permutes s's samples in place with a ChaCha8 stream from seed.
// The page shuffles a source once, before storing it: the runtime takes
// batches in storage order, and a shard sorted by label (as a
// partitioner may return it) would otherwise feed one class per round.
func Shuffle(s dataset.Set, seed [32]byte) {
	r := rand.New(rand.NewChaCha8(seed))
	r.Shuffle(len(s.Samples), func(i, j int) { s.Samples[i], s.Samples[j] = s.Samples[j], s.Samples[i] })
}
