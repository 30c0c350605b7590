package dataset

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// DataType is the IDX element type code (the third byte of the magic
// number).
type DataType byte

// The IDX element types (http://yann.lecun.com/exdb/mnist/, "THE IDX FILE
// FORMAT"). Multi-byte elements are big-endian.
const (
	Uint8   DataType = 0x08
	Int8    DataType = 0x09
	Int16   DataType = 0x0B
	Int32   DataType = 0x0C
	Float32 DataType = 0x0D
	Float64 DataType = 0x0E
)

// Size returns the size in bytes of one element, or 0 for an unknown code.
func (t DataType) Size() int {
	switch t {
	case Uint8, Int8:
		return 1
	case Int16:
		return 2
	case Int32, Float32:
		return 4
	case Float64:
		return 8
	}
	return 0
}

// String returns the type's name, or its hex code if it is unknown.
func (t DataType) String() string {
	switch t {
	case Uint8:
		return "uint8"
	case Int8:
		return "int8"
	case Int16:
		return "int16"
	case Int32:
		return "int32"
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	}
	return fmt.Sprintf("0x%02x", byte(t))
}

// IDX is a parsed IDX file: an n-dimensional array of one element type.
type IDX struct {
	Type DataType
	// Dims are the dimension sizes, outermost first (e.g. [60000 28 28]);
	// 1 <= len(Dims) <= 255 and every size fits in a uint32.
	Dims []int
	// Data is the payload exactly as stored: the product of Dims elements
	// of Type.Size() bytes each, big-endian, row-major.
	Data []byte
}

// Len returns the number of elements, the product of Dims.
func (x *IDX) Len() int {
	n := 1
	for _, d := range x.Dims {
		n *= d
	}
	return n
}

// check reports why x cannot be written as an IDX file, or nil.
func (x *IDX) check() error {
	n, err := x.payloadLen()
	if err != nil {
		return err
	}
	if n != uint64(len(x.Data)) {
		return fmt.Errorf("dataset: IDX of %s %v needs %d payload bytes, has %d", x.Type, x.Dims, n, len(x.Data))
	}
	return nil
}

// payloadLen returns the payload's length in bytes that x's type and
// dimensions call for, or why they are not an IDX file's.
func (x *IDX) payloadLen() (uint64, error) {
	size := x.Type.Size()
	if size == 0 {
		return 0, fmt.Errorf("%w %v", ErrUnsupportedType, x.Type)
	}
	if len(x.Dims) == 0 || len(x.Dims) > 255 {
		return 0, fmt.Errorf("dataset: IDX needs 1 to 255 dimensions, got %d", len(x.Dims))
	}
	n := uint64(1)
	for i, d := range x.Dims {
		if d < 0 || uint64(d) > math.MaxUint32 {
			return 0, fmt.Errorf("dataset: IDX dimension %d is %d, want [0, 2^32)", i, d)
		}
		if d != 0 && n > math.MaxInt/uint64(size)/uint64(d) {
			return 0, fmt.Errorf("dataset: IDX dimensions %v overflow", x.Dims)
		}
		n *= uint64(d)
	}
	return n * uint64(size), nil
}

// Errors matched by errors.Is on an *IDXError.
var (
	ErrTruncated       = errors.New("truncated")
	ErrBadMagic        = errors.New("bad magic number")
	ErrUnsupportedType = errors.New("unsupported element type")
	ErrTooLarge        = errors.New("too large")
	ErrTrailingData    = errors.New("trailing data after the payload")
	ErrCorrupt         = errors.New("corrupt stream")
)

// IDXError reports where an IDX input went wrong.
type IDXError struct {
	Name string // the file name given to ReadIDX
	// Offset is the byte offset at which the input went wrong, counted in
	// the decompressed stream when Gzipped is true.
	Offset  int64
	Gzipped bool
	Err     error
}

func (e *IDXError) Error() string {
	where := "byte"
	if e.Gzipped {
		where = "decompressed byte"
	}
	return fmt.Sprintf("dataset: IDX file %q: %s %d: %v", e.Name, where, e.Offset, e.Err)
}

func (e *IDXError) Unwrap() error { return e.Err }

// DefaultMaxIDXBytes caps the payload ReadIDX accepts: 256 MiB, over five
// times the largest file we read (Fashion-MNIST training images,
// 47,040,000 bytes).
const DefaultMaxIDXBytes = 256 << 20

// readChunk is the first allocation for a payload; larger payloads grow by
// doubling as bytes actually arrive, so a header that lies about its size
// costs no more memory than the bytes behind it.
const readChunk = 1 << 20

// ReadIDX parses one IDX file from r, raw or gzipped (detected by the gzip
// magic bytes 1f 8b; an IDX magic number starts with two zero bytes). The
// name is used only in error messages. The payload may be at most
// DefaultMaxIDXBytes long and nothing may follow it.
func ReadIDX(r io.Reader, name string) (*IDX, error) {
	return ReadIDXLimit(r, name, DefaultMaxIDXBytes)
}

// ReadIDXLimit is ReadIDX with a payload cap of maxBytes (> 0).
func ReadIDXLimit(r io.Reader, name string, maxBytes int64) (*IDX, error) {
	return readIDX(r, name, maxBytes, -1, nil, nil)
}

// readIDX is ReadIDXLimit; size, if not negative, is the length of the
// (decompressed) file as its container states it (a file's size, a gzip
// trailer's ISIZE, modulo 2^32): when the header agrees with it, the
// payload is read into one allocation of its final size instead of
// growing by doubling, obtained from alloc (n bytes, zeroed; nil: make).
// With spill, the payload is written to spill as it is read instead, and
// the IDX returned has no Data.
func readIDX(r io.Reader, name string, maxBytes, size int64, alloc func(n int) []byte, spill io.Writer) (*IDX, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("dataset: reading IDX file %q: limit %d bytes, want > 0", name, maxBytes)
	}
	// On 32-bit platforms a payload must also fit an int.
	maxBytes = min(maxBytes, int64(math.MaxInt))
	br := bufio.NewReader(r)
	gzipped := false
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gzipped = true
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, &IDXError{Name: name, Gzipped: true, Err: fmt.Errorf("%w: gzip header: %w", ErrCorrupt, err)}
		}
		defer gz.Close()
		src = gz
	}
	fail := func(off int64, err error) (*IDX, error) {
		return nil, &IDXError{Name: name, Offset: off, Gzipped: gzipped, Err: err}
	}
	// readErr turns a short read at offset off into the error to report.
	readErr := func(off int64, what string, err error) (*IDX, error) {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fail(off, fmt.Errorf("%w %s", ErrTruncated, what))
		}
		if gzipped {
			return fail(off, fmt.Errorf("%w: reading %s: %w", ErrCorrupt, what, err))
		}
		return fail(off, fmt.Errorf("reading %s: %w", what, err))
	}

	var head [4]byte
	if k, err := io.ReadFull(src, head[:]); err != nil {
		return readErr(int64(k), "magic number", err)
	}
	for i := range 2 {
		if head[i] != 0 {
			return fail(int64(i), fmt.Errorf("%w % x, want 00 00 <type> <dims>", ErrBadMagic, head))
		}
	}
	x := &IDX{Type: DataType(head[2])}
	esize := x.Type.Size()
	if esize == 0 {
		return fail(2, fmt.Errorf("%w code 0x%02x", ErrUnsupportedType, head[2]))
	}
	ndims := int(head[3])
	if ndims == 0 {
		return fail(3, fmt.Errorf("%w: zero dimensions", ErrBadMagic))
	}
	dimBytes := make([]byte, 4*ndims)
	if k, err := io.ReadFull(src, dimBytes); err != nil {
		return readErr(int64(4+k), fmt.Sprintf("dimension sizes (%d dimensions)", ndims), err)
	}
	x.Dims = make([]int, ndims)
	// The payload size in elements; maxElems bounds it by the byte cap.
	maxElems := uint64(maxBytes) / uint64(esize)
	elems := uint64(1)
	for i := range x.Dims {
		d := uint64(binary.BigEndian.Uint32(dimBytes[4*i:]))
		off := int64(4 + 4*i)
		if d > maxElems {
			return fail(off, fmt.Errorf("%w: dimension %d is %d, over the %d-byte limit", ErrTooLarge, i, d, maxBytes))
		}
		if d != 0 && elems > maxElems/d {
			return fail(off, fmt.Errorf("%w: dimensions %v... need over %d bytes", ErrTooLarge, x.Dims[:i+1], maxBytes))
		}
		x.Dims[i] = int(d)
		elems *= d
		if elems > maxElems {
			// Unreachable given the checks above; kept so the bound is
			// checked where it is used.
			return fail(off, fmt.Errorf("%w: over %d bytes", ErrTooLarge, maxBytes))
		}
	}
	hdr := int64(4 + 4*ndims)
	n := int(elems) * esize
	if spill != nil {
		sink := &sinkWriter{w: spill}
		k, err := io.CopyN(sink, src, int64(n))
		if sink.err != nil {
			return nil, fmt.Errorf("dataset: IDX file %q: writing its payload: %w", name, sink.err)
		}
		if err != nil {
			return readErr(hdr+k, fmt.Sprintf("payload: %d of %d bytes", k, n), err)
		}
	} else if size >= 0 && uint32(size) == uint32(hdr+int64(n)) && alloc != nil {
		x.Data = alloc(n)[:0]
	} else if size >= 0 && uint32(size) == uint32(hdr+int64(n)) {
		x.Data = make([]byte, 0, n)
	} else {
		x.Data = make([]byte, 0, min(n, readChunk))
	}
	for spill == nil && len(x.Data) < n {
		want := min(n-len(x.Data), max(len(x.Data), readChunk))
		x.Data = slices.Grow(x.Data, want)
		k, err := io.ReadFull(src, x.Data[len(x.Data):len(x.Data)+want])
		x.Data = x.Data[:len(x.Data)+k]
		if err != nil {
			return readErr(hdr+int64(len(x.Data)), fmt.Sprintf("payload: %d of %d bytes", len(x.Data), n), err)
		}
	}
	// Nothing may follow; reading to the end also makes gzip verify its
	// checksum.
	var one [1]byte
	if k, err := io.ReadFull(src, one[:]); k > 0 {
		return fail(hdr+int64(n), ErrTrailingData)
	} else if !errors.Is(err, io.EOF) {
		return readErr(hdr+int64(n), "end of file", err)
	}
	return x, nil
}

// WriteIDX writes x to w in the IDX format (raw; wrap w in a gzip.Writer
// to compress). It checks x first: a known Type, 1 to 255 dimensions each
// below 2^32, and len(Data) == Len()*Type.Size().
func WriteIDX(w io.Writer, x *IDX) error {
	if x == nil {
		return errors.New("dataset: writing IDX: nil IDX")
	}
	if err := x.check(); err != nil {
		return fmt.Errorf("dataset: writing IDX: %w", err)
	}
	head := make([]byte, 4+4*len(x.Dims))
	head[2] = byte(x.Type)
	head[3] = byte(len(x.Dims))
	for i, d := range x.Dims {
		binary.BigEndian.PutUint32(head[4+4*i:], uint32(d))
	}
	if _, err := w.Write(head); err != nil {
		return fmt.Errorf("dataset: writing IDX header: %w", err)
	}
	if _, err := w.Write(x.Data); err != nil {
		return fmt.Errorf("dataset: writing IDX payload: %w", err)
	}
	return nil
}

// sinkWriter is a writer that remembers its first error, to tell a
// failed write from a failed read in a copy.
type sinkWriter struct {
	w   io.Writer
	err error
}

func (s *sinkWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}
