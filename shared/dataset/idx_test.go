package dataset

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
)

// idxBytes builds a raw IDX file by hand (not with WriteIDX) so the reader
// is checked against the format, not against our writer.
func idxBytes(typ byte, dims []uint32, payload []byte) []byte {
	b := []byte{0, 0, typ, byte(len(dims))}
	for _, d := range dims {
		b = append(b, byte(d>>24), byte(d>>16), byte(d>>8), byte(d))
	}
	return append(b, payload...)
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(7*i + 3)
	}
	return b
}

func TestReadIDXValid(t *testing.T) {
	tests := []struct {
		name    string
		typ     DataType
		dims    []uint32
		payload []byte
	}{
		{"labels", Uint8, []uint32{5}, []byte{0, 9, 3, 3, 1}},
		{"images", Uint8, []uint32{2, 3, 4}, seq(24)},
		{"int8", Int8, []uint32{3}, []byte{0x80, 0, 0x7f}},
		{"int16", Int16, []uint32{2}, seq(4)},
		{"int32", Int32, []uint32{1, 1}, seq(4)},
		{"float32", Float32, []uint32{3}, seq(12)},
		{"float64", Float64, []uint32{1, 2}, seq(16)},
		{"empty", Uint8, []uint32{0, 28, 28}, nil},
		{"zero inner", Uint8, []uint32{4, 0}, nil},
	}
	for _, tc := range tests {
		raw := idxBytes(byte(tc.typ), tc.dims, tc.payload)
		for _, zipped := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/gzip=%v", tc.name, zipped), func(t *testing.T) {
				in := raw
				if zipped {
					in = gzipBytes(t, raw)
				}
				x, err := ReadIDX(bytes.NewReader(in), tc.name)
				if err != nil {
					t.Fatalf("ReadIDX: %v", err)
				}
				if x.Type != tc.typ {
					t.Errorf("type = %v, want %v", x.Type, tc.typ)
				}
				if len(x.Dims) != len(tc.dims) {
					t.Fatalf("dims = %v, want %v", x.Dims, tc.dims)
				}
				for i, d := range tc.dims {
					if x.Dims[i] != int(d) {
						t.Errorf("dims = %v, want %v", x.Dims, tc.dims)
					}
				}
				if !bytes.Equal(x.Data, tc.payload) {
					t.Errorf("payload = %v, want %v", x.Data, tc.payload)
				}
				var out bytes.Buffer
				if err := WriteIDX(&out, x); err != nil {
					t.Fatalf("WriteIDX: %v", err)
				}
				if !bytes.Equal(out.Bytes(), raw) {
					t.Errorf("WriteIDX wrote % x, want % x", out.Bytes(), raw)
				}
			})
		}
	}
}

func TestReadIDXErrors(t *testing.T) {
	valid := idxBytes(0x08, []uint32{4}, []byte{1, 2, 3, 4})
	zValid := gzipBytes(t, valid)
	badCRC := bytes.Clone(zValid)
	badCRC[len(badCRC)-8] ^= 0xff // first byte of the CRC-32 trailer
	tests := []struct {
		name    string
		in      []byte
		limit   int64
		want    error
		offset  int64
		gzipped bool
	}{
		{"empty", nil, 0, ErrTruncated, 0, false},
		{"short magic", []byte{0, 0, 8}, 0, ErrTruncated, 3, false},
		{"bad magic byte 0", []byte{1, 0, 8, 1, 0, 0, 0, 0}, 0, ErrBadMagic, 0, false},
		{"bad magic byte 1", []byte{0, 2, 8, 1, 0, 0, 0, 0}, 0, ErrBadMagic, 1, false},
		{"text file", []byte("hello, world"), 0, ErrBadMagic, 0, false},
		{"type 0x0a", []byte{0, 0, 0x0a, 1, 0, 0, 0, 0}, 0, ErrUnsupportedType, 2, false},
		{"type 0x00", []byte{0, 0, 0, 1, 0, 0, 0, 0}, 0, ErrUnsupportedType, 2, false},
		{"zero dims", []byte{0, 0, 8, 0}, 0, ErrBadMagic, 3, false},
		{"short dims", []byte{0, 0, 8, 2, 0, 0, 0, 3, 0, 0}, 0, ErrTruncated, 10, false},
		{"dim over limit", idxBytes(8, []uint32{0xffffffff}, nil), 0, ErrTooLarge, 4, false},
		{"product over limit", idxBytes(8, []uint32{1 << 16, 1 << 16, 1 << 16}, nil), 0, ErrTooLarge, 8, false},
		{"float64 over limit", idxBytes(0x0e, []uint32{5}, nil), 32, ErrTooLarge, 4, false},
		{"payload over limit", valid, 3, ErrTooLarge, 4, false},
		{"short payload", idxBytes(8, []uint32{5}, []byte{1, 2, 3}), 0, ErrTruncated, 11, false},
		{"short int16 payload", idxBytes(0x0b, []uint32{2}, []byte{1, 2, 3}), 0, ErrTruncated, 11, false},
		{"trailing byte", append(bytes.Clone(valid), 0), 0, ErrTrailingData, 12, false},
		{"gzip trailing byte", gzipBytes(t, append(bytes.Clone(valid), 9, 9)), 0, ErrTrailingData, 12, true},
		{"gzip cut", zValid[:len(zValid)-10], 0, ErrTruncated, -1, true},
		{"gzip bad crc", badCRC, 0, ErrCorrupt, 12, true},
		{"gzip bad header", []byte{0x1f, 0x8b, 0, 0}, 0, ErrCorrupt, 0, true},
		{"gzip short payload", gzipBytes(t, idxBytes(8, []uint32{5}, []byte{1, 2})), 0, ErrTruncated, 10, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			limit := tc.limit
			if limit == 0 {
				limit = DefaultMaxIDXBytes
			}
			x, err := ReadIDXLimit(bytes.NewReader(tc.in), "f.idx", limit)
			if err == nil {
				t.Fatalf("ReadIDX = %v, want an error", x)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("error %q is not %q", err, tc.want)
			}
			var ie *IDXError
			if !errors.As(err, &ie) {
				t.Fatalf("error %q is not an *IDXError", err)
			}
			// A cut gzip stream fails wherever the decompressor stops; any
			// offset up to the payload end is right.
			if tc.offset >= 0 && ie.Offset != tc.offset {
				t.Errorf("offset = %d, want %d (%v)", ie.Offset, tc.offset, err)
			}
			if ie.Gzipped != tc.gzipped || ie.Name != "f.idx" {
				t.Errorf("gzipped, name = %v, %q, want %v, f.idx", ie.Gzipped, ie.Name, tc.gzipped)
			}
			msg := err.Error()
			if !strings.Contains(msg, `"f.idx"`) || !strings.Contains(msg, fmt.Sprintf("byte %d", ie.Offset)) {
				t.Errorf("message %q does not name the file and the offset", msg)
			}
		})
	}
	if _, err := ReadIDXLimit(bytes.NewReader(valid), "f", 0); err == nil {
		t.Error("ReadIDXLimit with limit 0: no error")
	}
}

// TestReadIDXLyingHeader checks that a header claiming 200 MB in front of
// 10 bytes costs about readChunk of memory, not 200 MB.
func TestReadIDXLyingHeader(t *testing.T) {
	in := idxBytes(8, []uint32{200_000, 1000}, seq(10))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ReadIDX(bytes.NewReader(in), "liar")
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("err = %v, want truncated", err)
	}
	// readChunk (1 MiB) for the payload, 4 KiB for bufio, the rest small;
	// 8 MiB leaves room for the runtime's own allocations in this window.
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("reading a lying header allocated %d bytes, want < 8 MiB", got)
	}
}

// TestReadIDXLarge checks the chunked payload reader on a payload of
// several chunks, gzipped, whose size is not a multiple of the chunk.
func TestReadIDXLarge(t *testing.T) {
	payload := seq(3*readChunk + 12345)
	raw := idxBytes(8, []uint32{uint32(len(payload))}, payload)
	x, err := ReadIDX(bytes.NewReader(gzipBytes(t, raw)), "big")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x.Data, payload) {
		t.Error("payload differs")
	}
}

func TestWriteIDXRejects(t *testing.T) {
	tests := []struct {
		name string
		x    *IDX
	}{
		{"nil", nil},
		{"unknown type", &IDX{Type: 0x0a, Dims: []int{1}, Data: []byte{0}}},
		{"no dims", &IDX{Type: Uint8, Dims: nil, Data: []byte{0}}},
		{"256 dims", &IDX{Type: Uint8, Dims: make([]int, 256)}},
		{"negative dim", &IDX{Type: Uint8, Dims: []int{-1}}},
		{"short data", &IDX{Type: Uint8, Dims: []int{2, 2}, Data: []byte{1, 2, 3}}},
		{"long data", &IDX{Type: Int16, Dims: []int{1}, Data: []byte{1, 2, 3}}},
	}
	// An int can hold 2^32 only on 64-bit platforms.
	if over := int64(math.MaxUint32) + 1; math.MaxInt > math.MaxUint32 {
		tests = append(tests, struct {
			name string
			x    *IDX
		}{"dim over uint32", &IDX{Type: Uint8, Dims: []int{int(over), 0}}})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteIDX(&buf, tc.x); err == nil {
				t.Errorf("WriteIDX(%+v) wrote % x, want an error", tc.x, buf.Bytes())
			}
		})
	}
}

func FuzzReadIDX(f *testing.F) {
	f.Add(idxBytes(8, []uint32{3}, []byte{1, 2, 3}))
	f.Add(idxBytes(8, []uint32{2, 2, 2}, seq(8)))
	f.Add(idxBytes(0x0d, []uint32{2}, seq(8)))
	f.Add(idxBytes(8, []uint32{0, 5}, nil))
	f.Add(idxBytes(8, []uint32{5}, []byte{1, 2}))
	f.Add(idxBytes(8, []uint32{1}, []byte{1, 2}))
	f.Add(idxBytes(0x0a, []uint32{1}, []byte{1}))
	f.Add(idxBytes(8, []uint32{0xffff, 0xffff}, nil))
	f.Add([]byte{0, 0, 8})
	f.Add([]byte{})
	f.Add(gzipBytes(f, idxBytes(8, []uint32{4}, []byte{4, 3, 2, 1})))
	f.Add(gzipBytes(f, []byte{0, 0, 8, 1, 0}))
	// A small limit keeps the fuzzer from spending its time allocating.
	const limit = 1 << 16
	f.Fuzz(func(t *testing.T, in []byte) {
		x, err := ReadIDXLimit(bytes.NewReader(in), "fuzz", limit)
		if err != nil {
			var ie *IDXError
			if !errors.As(err, &ie) {
				t.Fatalf("error %q is not an *IDXError", err)
			}
			if ie.Offset < 0 || (!ie.Gzipped && ie.Offset > int64(len(in))) {
				t.Fatalf("offset %d outside the %d-byte input", ie.Offset, len(in))
			}
			return
		}
		if len(x.Data) > limit {
			t.Fatalf("accepted %d payload bytes over the %d limit", len(x.Data), limit)
		}
		var out bytes.Buffer
		if err := WriteIDX(&out, x); err != nil {
			t.Fatalf("WriteIDX of a parsed IDX: %v", err)
		}
		gzipped := len(in) >= 2 && in[0] == 0x1f && in[1] == 0x8b
		if !gzipped && !bytes.Equal(out.Bytes(), in) {
			t.Fatalf("round trip: wrote % x, read % x", out.Bytes(), in)
		}
		y, err := ReadIDXLimit(&out, "again", limit)
		if err != nil {
			t.Fatalf("re-reading a written IDX: %v", err)
		}
		if y.Type != x.Type || fmt.Sprint(y.Dims) != fmt.Sprint(x.Dims) || !bytes.Equal(y.Data, x.Data) {
			t.Fatalf("round trip changed %v %v to %v %v", x.Type, x.Dims, y.Type, y.Dims)
		}
	})
}
