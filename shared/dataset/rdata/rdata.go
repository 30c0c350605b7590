// Package rdata reads the data sets that R packages ship: objects in R's
// serialization format (the XDR binary form "X\n", versions 2 and 3) and
// an installed package's lazy-load database (data/Rdata.rdx, the index, and
// data/Rdata.rdb, the values), as far as data frames need: numeric,
// integer, logical, character and factor columns, lists, attributes and
// the references and environments that surround them.
//
// We read the format ourselves because no maintained Go library does
// (docs/tasks.md says why we read the package rather than install R). The
// layout follows R's documentation of serialize() ("R Internals", section
// 1.8, Serialization Formats) and the lazy-load database written by
// tools:::makeLazyLoadDB.
//
// # Invariants
//
//   - Unserialize never panics and allocates in proportion to its input:
//     every length is checked against the bytes left before anything is
//     allocated (compact sequences such as 1:n, stored as three numbers
//     each, together against 64 times the input), and nesting deeper than MaxDepth is an
//     error. Every error wraps ErrFormat or ErrUnsupported (errors.Is).
//   - A lazy-load value is decompressed with a limit (MaxValueBytes).
package rdata

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// Errors matched with errors.Is.
var (
	// ErrFormat: the bytes are not a well-formed serialization.
	ErrFormat = errors.New("rdata: malformed input")
	// ErrUnsupported: well-formed, but a part this package does not read
	// (ASCII or native serializations, closures' byte code, xz values...).
	ErrUnsupported = errors.New("rdata: unsupported")
)

// MaxDepth is the deepest nesting Unserialize follows.
const MaxDepth = 256

// MaxValueBytes bounds one decompressed value of a lazy-load database.
const MaxValueBytes = 512 << 20

// SEXP types (R Internals, section 1.1) and the serialization's special
// codes.
const (
	typeNil     = 0
	typeSym     = 1
	typeList    = 2
	typeClosure = 3
	typeEnv     = 4
	typePromise = 5
	typeLang    = 6
	typeSpecial = 7
	typeBuiltin = 8
	typeChar    = 9
	typeLogical = 10
	typeInt     = 13
	typeReal    = 14
	typeComplex = 15
	typeString  = 16
	typeDots    = 17
	typeVector  = 19
	typeExpr    = 20
	typeRaw     = 24
	typeS4      = 25

	codeAltrep      = 238
	codeAttrList    = 239
	codeAttrLang    = 240
	codeBaseEnv     = 241
	codeEmptyEnv    = 242
	codeBaseNS      = 250
	codeMissingArg  = 251
	codeUnbound     = 252
	codeGlobalEnv   = 253
	codeNilValue    = 254
	codeRef         = 255
	codeNamespace   = 249
	codePackage     = 248
	codePersist     = 247
	flagHasAttr     = 1 << 9
	flagHasTag      = 1 << 10
	naInt           = math.MinInt32
	maxStringLength = 1 << 24
)

// Object is one R value. Which fields are set depends on Type: Ints for
// integer and logical vectors (NA is math.MinInt32), Reals for double
// vectors (NA is R's NaN payload), Strings for character vectors (with NA
// marked in StringNA) and for symbols and CHARSXPs (Strings[0]), Items for
// lists and pairlists (Tags beside them for pairlists).
type Object struct {
	Type     int
	Ints     []int32
	Reals    []float64
	Strings  []string
	StringNA []bool
	Items    []*Object
	Tags     []string
	// Attr holds the attributes by name, in order.
	Attr []Attribute
}

// Attribute is one named attribute of an Object.
type Attribute struct {
	Name  string
	Value *Object
}

// Attribute returns the attribute of that name, or nil.
func (o *Object) Attribute(name string) *Object {
	if o == nil {
		return nil
	}
	for _, a := range o.Attr {
		if a.Name == name {
			return a.Value
		}
	}
	return nil
}

// Inherits reports whether the object's class attribute names class.
func (o *Object) Inherits(class string) bool {
	c := o.Attribute("class")
	if c == nil {
		return false
	}
	for _, s := range c.Strings {
		if s == class {
			return true
		}
	}
	return false
}

// Len is the number of elements of a vector, list or pairlist.
func (o *Object) Len() int {
	switch o.Type {
	case typeLogical, typeInt:
		return len(o.Ints)
	case typeReal:
		return len(o.Reals)
	case typeString:
		return len(o.Strings)
	case typeVector, typeExpr, typeList:
		return len(o.Items)
	}
	return 0
}

// Names returns the names attribute's strings (or, for a pairlist, its
// tags).
func (o *Object) Names() []string {
	if o.Type == typeList {
		return o.Tags
	}
	if n := o.Attribute("names"); n != nil && n.Type == typeString {
		return n.Strings
	}
	return nil
}

// Field returns the element of a named list or pairlist, or nil.
func (o *Object) Field(name string) *Object {
	for i, n := range o.Names() {
		if n == name && i < len(o.Items) {
			return o.Items[i]
		}
	}
	return nil
}

var nilObject = &Object{Type: typeNil}

// reader walks one serialization held in memory.
type reader struct {
	buf  []byte
	off  int
	refs []*Object
	// expanded counts the elements of compact sequences expanded so far:
	// all of them together stay within 64 times the input.
	expanded int
}

func (r *reader) fail(format string, args ...any) error {
	return fmt.Errorf("%w at byte %d: %s", ErrFormat, r.off, fmt.Sprintf(format, args...))
}

func (r *reader) need(n int) error {
	if n < 0 || n > len(r.buf)-r.off {
		return r.fail("need %d bytes, %d left", n, len(r.buf)-r.off)
	}
	return nil
}

func (r *reader) int() (int32, error) {
	if err := r.need(4); err != nil {
		return 0, err
	}
	v := int32(binary.BigEndian.Uint32(r.buf[r.off:]))
	r.off += 4
	return v, nil
}

// length reads a vector length (a long length is -1 then two words) and
// checks that at least min bytes per element remain.
func (r *reader) length(min int) (int, error) {
	n32, err := r.int()
	if err != nil {
		return 0, err
	}
	n := int64(n32)
	if n32 == -1 {
		hi, err := r.int()
		if err != nil {
			return 0, err
		}
		lo, err := r.int()
		if err != nil {
			return 0, err
		}
		n = int64(uint32(hi))<<32 | int64(uint32(lo))
	}
	if n < 0 {
		return 0, r.fail("negative length %d", n)
	}
	if n > int64(len(r.buf)-r.off)/int64(min) {
		return 0, r.fail("length %d does not fit in the %d bytes left", n, len(r.buf)-r.off)
	}
	return int(n), nil
}

// Unserialize parses one serialized R object (the XDR form, as written by
// saveRDS and serialize(); gunzip an .rds file first, or use ReadRDS).
func Unserialize(data []byte) (*Object, error) {
	r := &reader{buf: data}
	if len(data) < 2 {
		return nil, r.fail("too short for a header")
	}
	switch string(data[:2]) {
	case "X\n":
	case "A\n", "B\n":
		return nil, fmt.Errorf("%w: serialization form %q (only the XDR form \"X\" is read)", ErrUnsupported, data[:1])
	default:
		return nil, r.fail("not an R serialization (header %q)", data[:2])
	}
	r.off = 2
	version, err := r.int()
	if err != nil {
		return nil, err
	}
	if version != 2 && version != 3 {
		return nil, fmt.Errorf("%w: serialization version %d", ErrUnsupported, version)
	}
	if _, err := r.int(); err != nil { // the writer's R version
		return nil, err
	}
	if _, err := r.int(); err != nil { // the oldest R that reads it
		return nil, err
	}
	if version == 3 {
		n, err := r.length(1)
		if err != nil {
			return nil, err
		}
		r.off += n // the native encoding's name
	}
	return r.item(0)
}

func (r *reader) item(depth int) (*Object, error) {
	if depth > MaxDepth {
		return nil, r.fail("nested deeper than %d", MaxDepth)
	}
	flags, err := r.int()
	if err != nil {
		return nil, err
	}
	return r.itemWith(flags, depth)
}

func (r *reader) itemWith(flags int32, depth int) (*Object, error) {
	typ := int(flags & 0xff)
	switch typ {
	case codeNilValue:
		return nilObject, nil
	case codeEmptyEnv, codeBaseEnv, codeGlobalEnv, codeUnbound, codeMissingArg, codeBaseNS:
		return &Object{Type: typ}, nil
	case codeRef:
		i := int(flags >> 8)
		if i == 0 {
			v, err := r.int()
			if err != nil {
				return nil, err
			}
			i = int(v)
		}
		if i < 1 || i > len(r.refs) {
			return nil, r.fail("reference %d of %d", i, len(r.refs))
		}
		return r.refs[i-1], nil
	case codePersist, codePackage, codeNamespace:
		o, err := r.stringVec(depth)
		if err != nil {
			return nil, err
		}
		o.Type = typ
		r.refs = append(r.refs, o)
		return o, nil
	case typeSym:
		o := &Object{Type: typeSym}
		r.refs = append(r.refs, o) // R adds the symbol after reading its name; no reference can point inside it
		name, err := r.item(depth + 1)
		if err != nil {
			return nil, err
		}
		if name.Type != typeChar {
			return nil, r.fail("symbol name of type %d", name.Type)
		}
		o.Strings = name.Strings
		return o, nil
	case typeEnv:
		return r.env(depth)
	case typeList, typeLang, typeClosure, typePromise, typeDots, codeAttrLang, codeAttrList:
		return r.pairlist(flags, depth)
	case codeAltrep:
		return r.altrep(depth)
	}
	o, err := r.vector(typ, depth)
	if err != nil {
		return nil, err
	}
	if flags&flagHasAttr != 0 {
		if err := r.attributes(o, depth); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// vector reads the body of a vector-like item of type typ.
func (r *reader) vector(typ, depth int) (*Object, error) {
	o := &Object{Type: typ}
	switch typ {
	case typeChar:
		n, err := r.int()
		if err != nil {
			return nil, err
		}
		if n == -1 {
			o.Strings, o.StringNA = []string{""}, []bool{true}
			return o, nil
		}
		if n < 0 || n > maxStringLength {
			return nil, r.fail("string length %d", n)
		}
		if err := r.need(int(n)); err != nil {
			return nil, err
		}
		o.Strings, o.StringNA = []string{string(r.buf[r.off : r.off+int(n)])}, []bool{false}
		r.off += int(n)
	case typeLogical, typeInt:
		n, err := r.length(4)
		if err != nil {
			return nil, err
		}
		o.Ints = make([]int32, n)
		for i := range o.Ints {
			o.Ints[i] = int32(binary.BigEndian.Uint32(r.buf[r.off:]))
			r.off += 4
		}
	case typeReal, typeComplex:
		per := 8
		if typ == typeComplex {
			per = 16
		}
		n, err := r.length(per)
		if err != nil {
			return nil, err
		}
		o.Reals = make([]float64, n*per/8)
		for i := range o.Reals {
			o.Reals[i] = math.Float64frombits(binary.BigEndian.Uint64(r.buf[r.off:]))
			r.off += 8
		}
	case typeString:
		n, err := r.length(8)
		if err != nil {
			return nil, err
		}
		o.Strings, o.StringNA = make([]string, n), make([]bool, n)
		for i := 0; i < n; i++ {
			c, err := r.item(depth + 1)
			if err != nil {
				return nil, err
			}
			if c.Type != typeChar {
				return nil, r.fail("element %d of a character vector has type %d", i, c.Type)
			}
			o.Strings[i], o.StringNA[i] = c.Strings[0], c.StringNA[0]
		}
	case typeVector, typeExpr:
		n, err := r.length(4)
		if err != nil {
			return nil, err
		}
		o.Items = make([]*Object, n)
		for i := range o.Items {
			if o.Items[i], err = r.item(depth + 1); err != nil {
				return nil, err
			}
		}
	case typeRaw:
		n, err := r.length(1)
		if err != nil {
			return nil, err
		}
		o.Ints = make([]int32, n)
		for i := range o.Ints {
			o.Ints[i] = int32(r.buf[r.off+i])
		}
		r.off += n
	case typeSpecial, typeBuiltin:
		n, err := r.length(1)
		if err != nil {
			return nil, err
		}
		o.Strings = []string{string(r.buf[r.off : r.off+n])}
		r.off += n
	case typeS4:
		// only attributes follow
	default:
		return nil, fmt.Errorf("%w: R object type %d at byte %d", ErrUnsupported, typ, r.off)
	}
	return o, nil
}

// stringVec reads the string vector of a persistent name, package or
// namespace (a zero, a length, then CHARSXP items).
func (r *reader) stringVec(depth int) (*Object, error) {
	if _, err := r.int(); err != nil {
		return nil, err
	}
	return r.vector(typeString, depth)
}

func (r *reader) env(depth int) (*Object, error) {
	if _, err := r.int(); err != nil { // locked
		return nil, err
	}
	o := &Object{Type: typeEnv}
	r.refs = append(r.refs, o) // before its contents, which may refer to it
	for _, part := range []string{"enclos", "frame", "hashtab", "attributes"} {
		v, err := r.item(depth + 1)
		if err != nil {
			return nil, err
		}
		if part == "frame" || part == "hashtab" {
			o.Items = append(o.Items, v)
		}
	}
	return o, nil
}

// pairlist reads a pairlist-like item iteratively along its tail, so a long
// list does not nest.
func (r *reader) pairlist(flags int32, depth int) (*Object, error) {
	o := &Object{Type: typeList}
	if int(flags&0xff) != typeList && int(flags&0xff) != codeAttrList {
		o.Type = int(flags & 0xff)
	}
	for {
		var attr *Object
		if flags&flagHasAttr != 0 {
			var err error
			if attr, err = r.item(depth + 1); err != nil {
				return nil, err
			}
		}
		tag := ""
		if flags&flagHasTag != 0 {
			t, err := r.item(depth + 1)
			if err != nil {
				return nil, err
			}
			if len(t.Strings) > 0 {
				tag = t.Strings[0]
			}
		}
		car, err := r.item(depth + 1)
		if err != nil {
			return nil, err
		}
		if attr != nil && len(o.Items) == 0 {
			o.Attr = attrsOf(attr)
		}
		o.Items = append(o.Items, car)
		o.Tags = append(o.Tags, tag)
		next, err := r.int()
		if err != nil {
			return nil, err
		}
		switch int(next & 0xff) {
		case typeList, typeLang, typeClosure, typePromise, typeDots, codeAttrLang, codeAttrList:
			flags = next
			continue
		case codeNilValue:
			return o, nil
		}
		// A dotted tail: keep it as the last item.
		tail, err := r.itemWith(next, depth+1)
		if err != nil {
			return nil, err
		}
		o.Items = append(o.Items, tail)
		o.Tags = append(o.Tags, "")
		return o, nil
	}
}

func attrsOf(p *Object) []Attribute {
	if p == nil || p.Type != typeList {
		return nil
	}
	out := make([]Attribute, 0, len(p.Items))
	for i, v := range p.Items {
		out = append(out, Attribute{Name: p.Tags[i], Value: v})
	}
	return out
}

func (r *reader) attributes(o *Object, depth int) error {
	a, err := r.item(depth + 1)
	if err != nil {
		return err
	}
	o.Attr = attrsOf(a)
	return nil
}

// altrep reads an alternative representation: the compact integer and
// double sequences R uses for 1:n (row names among them) and the wrappers
// around an ordinary vector.
func (r *reader) altrep(depth int) (*Object, error) {
	info, err := r.item(depth + 1)
	if err != nil {
		return nil, err
	}
	state, err := r.item(depth + 1)
	if err != nil {
		return nil, err
	}
	attr, err := r.item(depth + 1)
	if err != nil {
		return nil, err
	}
	if info.Type != typeList || len(info.Items) == 0 || len(info.Items[0].Strings) == 0 {
		return nil, r.fail("alternative representation without a class")
	}
	class := info.Items[0].Strings[0]
	var o *Object
	switch class {
	case "compact_intseq", "compact_realseq":
		if state.Type != typeReal || len(state.Reals) != 3 {
			return nil, r.fail("%s state", class)
		}
		n, start, step := state.Reals[0], state.Reals[1], state.Reals[2]
		if !(n >= 0 && n <= float64(len(r.buf)*64-r.expanded)) || math.IsNaN(start) || math.IsNaN(step) {
			return nil, r.fail("%s of length %g (with the sequences before it, over 64 times the input)", class, n)
		}
		r.expanded += int(n)
		if class == "compact_intseq" {
			o = &Object{Type: typeInt, Ints: make([]int32, int(n))}
			for i := range o.Ints {
				o.Ints[i] = int32(start + float64(i)*step)
			}
		} else {
			o = &Object{Type: typeReal, Reals: make([]float64, int(n))}
			for i := range o.Reals {
				o.Reals[i] = start + float64(i)*step
			}
		}
	case "wrap_integer", "wrap_real", "wrap_string", "wrap_logical", "wrap_list", "wrap_complex", "wrap_raw":
		if state.Type != typeList && state.Type != typeVector || len(state.Items) == 0 {
			return nil, r.fail("%s state", class)
		}
		inner := *state.Items[0]
		o = &inner
	default:
		return nil, fmt.Errorf("%w: alternative representation %q", ErrUnsupported, class)
	}
	if attr.Type == typeList {
		o.Attr = attrsOf(attr)
	}
	return o, nil
}

// ReadRDS parses a file written by saveRDS (gzip-compressed or plain XDR).
func ReadRDS(data []byte) (*Object, error) {
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		raw, err := io.ReadAll(io.LimitReader(zr, MaxValueBytes+1))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		if len(raw) > MaxValueBytes {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrFormat, MaxValueBytes)
		}
		data = raw
	}
	return Unserialize(data)
}

// LazyLoad reads the value of one variable from the lazy-load database
// dir/base.rdx and dir/base.rdb (for a package's data sets: dir is the
// package's data directory and base "Rdata").
func LazyLoad(dir, base, variable string) (*Object, error) {
	idxBytes, err := os.ReadFile(filepath.Join(dir, base+".rdx"))
	if err != nil {
		return nil, fmt.Errorf("rdata: %w", err)
	}
	idx, err := ReadRDS(idxBytes)
	if err != nil {
		return nil, fmt.Errorf("rdata: index %s.rdx: %w", base, err)
	}
	vars := idx.Field("variables")
	if vars == nil {
		return nil, fmt.Errorf("%w: index %s.rdx has no variables", ErrFormat, base)
	}
	key := vars.Field(variable)
	if key == nil {
		return nil, fmt.Errorf("rdata: %s has no variable %q (it has %v): %w", base, variable, vars.Names(), os.ErrNotExist)
	}
	var off, n int64
	switch {
	case key.Type == typeInt && len(key.Ints) == 2:
		off, n = int64(key.Ints[0]), int64(key.Ints[1])
	case key.Type == typeReal && len(key.Reals) == 2:
		off, n = int64(key.Reals[0]), int64(key.Reals[1])
	default:
		return nil, fmt.Errorf("%w: key of %q", ErrFormat, variable)
	}
	compressed := 1
	if c := idx.Field("compressed"); c != nil && len(c.Ints) == 1 {
		compressed = int(c.Ints[0])
	} else if c != nil && len(c.Reals) == 1 {
		compressed = int(c.Reals[0])
	}
	f, err := os.Open(filepath.Join(dir, base+".rdb"))
	if err != nil {
		return nil, fmt.Errorf("rdata: %w", err)
	}
	defer f.Close()
	if off < 0 || n < 5 || n > MaxValueBytes {
		return nil, fmt.Errorf("%w: value of %q at %d, %d bytes", ErrFormat, variable, off, n)
	}
	blob := make([]byte, n)
	if _, err := f.ReadAt(blob, off); err != nil {
		return nil, fmt.Errorf("rdata: reading %q: %w", variable, err)
	}
	raw, err := decompress(blob, compressed)
	if err != nil {
		return nil, fmt.Errorf("rdata: value of %q: %w", variable, err)
	}
	return Unserialize(raw)
}

// decompress undoes R's R_compress1/2/3 framing: the uncompressed length
// (4 bytes, big-endian), for types 2 and 3 a method byte, then the stream.
func decompress(blob []byte, compressed int) ([]byte, error) {
	want := int64(binary.BigEndian.Uint32(blob))
	if want > MaxValueBytes {
		return nil, fmt.Errorf("%w: claims %d bytes", ErrFormat, want)
	}
	body := blob[4:]
	var src io.Reader
	switch {
	case compressed == 0:
		return body, nil
	case compressed == 1:
		zr, err := zlib.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		src = zr
	default:
		method, rest := body[0], body[1:]
		switch method {
		case '0':
			return rest, nil
		case 'Z':
			zr, err := zlib.NewReader(bytes.NewReader(rest))
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrFormat, err)
			}
			src = zr
		case '2':
			src = bzip2.NewReader(bytes.NewReader(rest))
		default:
			return nil, fmt.Errorf("%w: compression method %q", ErrUnsupported, method)
		}
	}
	out, err := io.ReadAll(io.LimitReader(src, want+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if int64(len(out)) != want {
		return nil, fmt.Errorf("%w: %d bytes, the header says %d", ErrFormat, len(out), want)
	}
	return out, nil
}
