package dataset

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Compact is a labelled uint8 set kept as its IDX files store it: one byte
// per feature (the feature is the byte divided by 255, as in FromIDX) and
// one per label, a quarter of a Set's float32 features. It hands out Sets
// of any of its samples on demand, so a server that draws small shards
// from a large training set (the coordinator's demo shards) or evaluates
// on part of a test set never holds the whole set as float32. Its
// pixels are in memory, or on disk (LoadIDXDirOnDisk: a file read at each
// Subset and ShardBlob, so that the set costs the process no memory). A
// Compact is read-only and safe for concurrent use.
type Compact struct {
	Name     string
	Features int
	Classes  int
	// Shape is the shape of one sample's features (see Set.Shape).
	Shape  []int
	pixels []byte      // Len() x Features, or nil when on disk
	disk   *pixelsFile // the pixels when on disk
	labels []byte
}

// NewCompact checks images and labels as FromIDX does and keeps their
// bytes (without copying them).
func NewCompact(name string, images, labels *IDX, classes int) (*Compact, error) {
	return newCompact(name, images, nil, labels, classes)
}

// newCompact is NewCompact; with disk, the images' payload is disk's
// (images.Data is empty) and must be as long as their shape says.
func newCompact(name string, images *IDX, disk *pixelsFile, labels *IDX, classes int) (*Compact, error) {
	if images == nil || labels == nil {
		return nil, fmt.Errorf("dataset: building %q: nil IDX", name)
	}
	if classes <= 0 || classes > 256 {
		return nil, fmt.Errorf("dataset: building %q: classes = %d, want [1, 256]", name, classes)
	}
	if images.Type != Uint8 || labels.Type != Uint8 {
		return nil, fmt.Errorf("dataset: building %q: images are %s and labels %s, want uint8", name, images.Type, labels.Type)
	}
	if len(images.Dims) < 2 {
		return nil, fmt.Errorf("dataset: building %q: images have shape %v, want [n, features...]", name, images.Dims)
	}
	if len(labels.Dims) != 1 {
		return nil, fmt.Errorf("dataset: building %q: labels have shape %v, want [n]", name, labels.Dims)
	}
	n := images.Dims[0]
	if labels.Dims[0] != n {
		return nil, fmt.Errorf("dataset: building %q: %d images but %d labels", name, n, labels.Dims[0])
	}
	if disk == nil {
		if err := images.check(); err != nil {
			return nil, fmt.Errorf("dataset: building %q: images: %w", name, err)
		}
	} else if n, err := images.payloadLen(); err != nil || n != uint64(disk.size) {
		return nil, fmt.Errorf("dataset: building %q: images of %s %v on disk: %d bytes (%v)", name, images.Type, images.Dims, disk.size, err)
	}
	if err := labels.check(); err != nil {
		return nil, fmt.Errorf("dataset: building %q: labels: %w", name, err)
	}
	features := 1
	for _, d := range images.Dims[1:] {
		features *= d
	}
	if features == 0 {
		return nil, fmt.Errorf("dataset: building %q: images have shape %v, zero features", name, images.Dims)
	}
	for i, b := range labels.Data {
		if int(b) >= classes {
			return nil, fmt.Errorf("dataset: building %q: label %d of sample %d (labels file byte %d) is not below %d classes", name, b, i, 4+4*len(labels.Dims)+i, classes)
		}
	}
	return &Compact{Name: name, Features: features, Classes: classes, Shape: append([]int(nil), images.Dims[1:]...),
		pixels: images.Data, disk: disk, labels: labels.Data}, nil
}

// Len returns the number of samples.
func (c *Compact) Len() int { return len(c.labels) }

// Labels returns the label of every sample, in order, as a new slice.
func (c *Compact) Labels() []int {
	out := make([]int, len(c.labels))
	for i, b := range c.labels {
		out[i] = int(b)
	}
	return out
}

// pixel[b] = float32(b)/255, correctly rounded (multiplying by a rounded
// 1/255 would be off by an ulp for some bytes, e.g. 51).
var pixel = func() (p [256]float32) {
	for b := range p {
		p[b] = float32(b) / 255
	}
	return p
}()

// Subset returns the samples at the given indices, in that order, as a
// Set with its own float32 features (one backing array). Indices may
// repeat; one out of range is an error.
func (c *Compact) Subset(idx []int) (Set, error) {
	s := Set{Name: c.Name, Features: c.Features, Classes: c.Classes, Shape: c.Shape, Samples: make([]Sample, len(idx))}
	all := make([]float32, len(idx)*c.Features)
	var buf []byte
	if c.disk != nil {
		buf = make([]byte, c.Features)
	}
	for k, i := range idx {
		if i < 0 || i >= c.Len() {
			return Set{}, fmt.Errorf("dataset: subset of %q: index %d (position %d) out of range [0, %d)", c.Name, i, k, c.Len())
		}
		row, err := c.row(i, buf)
		if err != nil {
			return Set{}, fmt.Errorf("dataset: subset of %q: %w", c.Name, err)
		}
		x := all[k*c.Features : (k+1)*c.Features : (k+1)*c.Features]
		for j, b := range row {
			x[j] = pixel[b]
		}
		s.Samples[k] = Sample{X: x, Label: int(c.labels[i])}
	}
	return s, nil
}

// row returns sample i's pixels: a part of the stored bytes, or, on
// disk, read into buf (Features bytes).
func (c *Compact) row(i int, buf []byte) ([]byte, error) {
	if c.disk == nil {
		return c.pixels[i*c.Features : (i+1)*c.Features], nil
	}
	if err := c.disk.read(buf[:c.Features], int64(i)*int64(c.Features)); err != nil {
		return nil, fmt.Errorf("sample %d: %w", i, err)
	}
	return buf[:c.Features], nil
}

// OnDisk reports whether c's pixels are read from disk at each use.
func (c *Compact) OnDisk() bool { return c.disk != nil }

// Close releases the file of a set whose pixels are on disk (nothing
// otherwise); the set must not be used afterwards.
func (c *Compact) Close() error {
	if c.disk == nil {
		return nil
	}
	return c.disk.close()
}

// Head returns the first n samples (all of them if n >= Len()) as a Set.
func (c *Compact) Head(n int) (Set, error) {
	if n < 0 {
		return Set{}, fmt.Errorf("dataset: first %d samples of %q: negative count", n, c.Name)
	}
	idx := make([]int, min(n, c.Len()))
	for i := range idx {
		idx[i] = i
	}
	return c.Subset(idx)
}

// Set returns every sample as a Set (FromIDX's result).
func (c *Compact) Set() Set {
	s, _ := c.Head(c.Len()) // indices in range: no error
	return s
}

// ShardBlob returns the samples at the given indices, in that order, as a
// demo shard blob: EncodeShard of Subset(idx), byte for byte, made in one
// allocation of the blob's size straight from the stored bytes, without
// the float32 features. Indices may repeat; one out of range is an error.
func (c *Compact) ShardBlob(idx []int) ([]byte, error) {
	n := len(idx)
	dims := append([]int{n}, c.Shape...)
	imHead, labHead := 4+4*len(dims), 4+4
	imLen := imHead + n*c.Features
	if uint64(imLen) > math.MaxUint32 {
		return nil, fmt.Errorf("dataset: shard of %d samples of %q: %d bytes of images do not fit the blob's length word", n, c.Name, imLen)
	}
	blob := make([]byte, 4+imLen+labHead+n)
	binary.LittleEndian.PutUint32(blob, uint32(imLen))
	im, lab := blob[4:4+imLen], blob[4+imLen:]
	im[2], im[3] = byte(Uint8), byte(len(dims))
	for i, d := range dims {
		binary.BigEndian.PutUint32(im[4+4*i:], uint32(d))
	}
	lab[2], lab[3] = byte(Uint8), 1
	binary.BigEndian.PutUint32(lab[4:], uint32(n))
	pixels, labels := im[imHead:], lab[labHead:]
	for k, i := range idx {
		if i < 0 || i >= c.Len() {
			return nil, fmt.Errorf("dataset: shard of %q: index %d (position %d) out of range [0, %d)", c.Name, i, k, c.Len())
		}
		dst := pixels[k*c.Features : (k+1)*c.Features]
		row, err := c.row(i, dst)
		if err != nil {
			return nil, fmt.Errorf("dataset: shard of %q: %w", c.Name, err)
		}
		copy(dst, row) // a no-op when read from disk into dst
		labels[k] = c.labels[i]
	}
	return blob, nil
}
