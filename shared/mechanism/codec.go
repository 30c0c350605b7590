package mechanism

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Kind is the first byte of every payload.
type Kind byte

// Payload kinds. All integers and floats are little-endian.
//
//	Dense32: kind | dim u32 | dim x f32                      size 5 + 4d
//	Dense64: kind | dim u32 | dim x f64                      size 5 + 8d
//	Sparse:  kind | dim u32 | k u32 | k x idx u32 (strictly increasing, < dim)
//	         | k x val f32                                    size 9 + 8k
//	Quant:   kind | dim u32 | s u32 | bits u8 | norm f32
//	         | ceil(d*bits/8) bytes of packed codes c_i in [0, 2s]
//	           (LSB-first), decoded value norm * (c_i - s) / s; bits is the
//	           bit length of 2s and unused trailing bits are zero
//	                                                          size 14 + ceil(d*bits/8)
const (
	KindDense32 Kind = 1
	KindDense64 Kind = 2
	KindSparse  Kind = 3
	KindQuant   Kind = 4
	// KindQuantInf has Quant's layout; its norm field is ||x||_inf.
	KindQuantInf Kind = 5
)

// MaxDim bounds the dimension a payload may announce (2^26 parameters,
// 256 MiB as float32); it protects decoders from absurd allocations.
const MaxDim = 1 << 26

// MaxLevels bounds the quantisation levels s (codes fit in 32 bits).
const MaxLevels = 1 << 24

// ErrPayload is wrapped by every decoding error.
var ErrPayload = errors.New("mechanism: bad payload")

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrPayload, fmt.Sprintf(format, args...))
}

const headerSize = 5

// Header returns the kind and dimension announced by payload after checking
// that the payload is at least a header long and the dimension is in range.
func Header(payload []byte) (Kind, int, error) {
	if len(payload) < headerSize {
		return 0, 0, bad("%d bytes, shorter than the %d-byte header", len(payload), headerSize)
	}
	k := Kind(payload[0])
	d := binary.LittleEndian.Uint32(payload[1:5])
	if d == 0 || d > MaxDim {
		return 0, 0, bad("dimension %d outside [1, %d]", d, MaxDim)
	}
	switch k {
	case KindDense32, KindDense64, KindSparse, KindQuant, KindQuantInf:
	default:
		return 0, 0, bad("unknown kind %d", k)
	}
	return k, int(d), nil
}

func putHeader(buf []byte, k Kind, d int) []byte {
	buf = append(buf, byte(k))
	return binary.LittleEndian.AppendUint32(buf, uint32(d))
}

// decodeDense32 widens the little-endian float32 values of body (4 bytes
// per element of dst) into dst and reports whether all were finite, in
// one pass with four finiteness sums (x - x is 0 for every finite x and
// NaN otherwise) and no branch per element.
func decodeDense32(dst []float64, body []byte) bool {
	body = body[:4*len(dst)]
	var f0, f1, f2, f3 float32
	i := 0
	for ; i+4 <= len(dst); i += 4 {
		b := body[4*i : 4*i+16 : 4*i+16]
		d := dst[i : i+4 : i+4]
		x0 := math.Float32frombits(binary.LittleEndian.Uint32(b[0:]))
		x1 := math.Float32frombits(binary.LittleEndian.Uint32(b[4:]))
		x2 := math.Float32frombits(binary.LittleEndian.Uint32(b[8:]))
		x3 := math.Float32frombits(binary.LittleEndian.Uint32(b[12:]))
		f0 += x0 - x0
		f1 += x1 - x1
		f2 += x2 - x2
		f3 += x3 - x3
		d[0], d[1], d[2], d[3] = float64(x0), float64(x1), float64(x2), float64(x3)
	}
	for ; i < len(dst); i++ {
		x := math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:]))
		f0 += x - x
		dst[i] = float64(x)
	}
	return (f0+f1)+(f2+f3) == 0
}

// DecodeNorm is Decode followed by the vector's Euclidean norm: the
// square root of its plain sum of squares (four partial sums, a relative
// error of at most about len(dst) 2^-53), or Norm's scaled computation
// when that sum would overflow or underflow. Validation that compares an
// update's norm with a bound uses it: the bound's own margin is many
// orders of magnitude above that error.
func DecodeNorm(dst []float64, payload []byte) (float64, error) {
	if err := Decode(dst, payload); err != nil {
		return 0, err
	}
	return fastNorm(dst), nil
}

// Decode validates payload and writes the vector it encodes into dst, whose
// length must equal the payload's dimension. It never panics; on error dst
// may be partially written. Non-finite values are rejected.
func Decode(dst []float64, payload []byte) error {
	k, d, err := Header(payload)
	if err != nil {
		return err
	}
	if d != len(dst) {
		return bad("dimension %d, want %d", d, len(dst))
	}
	body := payload[headerSize:]
	switch k {
	case KindDense32:
		if len(body) != 4*d {
			return bad("dense32 body %d bytes, want %d", len(body), 4*d)
		}
		if !decodeDense32(dst, body) {
			for i := range dst {
				if v := math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:])); v-v != 0 {
					return bad("non-finite value at index %d", i)
				}
			}
		}
	case KindDense64:
		if len(body) != 8*d {
			return bad("dense64 body %d bytes, want %d", len(body), 8*d)
		}
		for i := range dst {
			v := math.Float64frombits(binary.LittleEndian.Uint64(body[8*i:]))
			if v-v != 0 {
				return bad("non-finite value at index %d", i)
			}
			dst[i] = v
		}
	case KindSparse:
		if len(body) < 4 {
			return bad("sparse body too short")
		}
		kk := binary.LittleEndian.Uint32(body)
		if kk > uint32(d) {
			return bad("sparse k = %d above dimension %d", kk, d)
		}
		n := int(kk)
		if len(body) != 4+8*n {
			return bad("sparse body %d bytes, want %d", len(body), 4+8*n)
		}
		idx := body[4 : 4+4*n]
		val := body[4+4*n:]
		for i := range dst {
			dst[i] = 0
		}
		prev := -1
		for j := 0; j < n; j++ {
			ix := binary.LittleEndian.Uint32(idx[4*j:])
			if int64(ix) >= int64(d) || int(ix) <= prev {
				return bad("sparse index %d at position %d not increasing within [0, %d)", ix, j, d)
			}
			prev = int(ix)
			v := math.Float32frombits(binary.LittleEndian.Uint32(val[4*j:]))
			if v != v || math.IsInf(float64(v), 0) {
				return bad("non-finite value at index %d", ix)
			}
			dst[ix] = float64(v)
		}
	case KindQuant, KindQuantInf:
		if len(body) < 9 {
			return bad("quant body too short")
		}
		s := binary.LittleEndian.Uint32(body)
		if s == 0 || s > MaxLevels {
			return bad("quant levels %d outside [1, %d]", s, MaxLevels)
		}
		nb := int(body[4])
		if nb != quantBits(int(s)) {
			return bad("quant bits %d, want %d for s = %d", nb, quantBits(int(s)), s)
		}
		norm := math.Float32frombits(binary.LittleEndian.Uint32(body[5:]))
		if norm != norm || math.IsInf(float64(norm), 0) || norm < 0 {
			return bad("quant norm %v not finite and >= 0", norm)
		}
		packed := body[9:]
		want := (d*nb + 7) / 8
		if len(packed) != want {
			return bad("quant body %d bytes, want %d", len(packed), want)
		}
		var r bitReader
		r.b = packed
		for i := range dst {
			c := r.read(nb)
			if c > 2*uint64(s) {
				return bad("quant code %d above 2s = %d at index %d", c, 2*s, i)
			}
			dst[i] = quantValue(norm, int(s), int(c))
		}
		if r.rest() != 0 {
			return bad("quant padding bits not zero")
		}
	}
	return nil
}

// quantValue is the single definition of a quantised coordinate's value.
func quantValue(norm float32, s, c int) float64 {
	return float64(norm) * float64(c-s) / float64(s)
}

// quantBits is the bit length of 2s.
func quantBits(s int) int {
	n := 0
	for v := 2 * s; v > 0; v >>= 1 {
		n++
	}
	return n
}

type bitWriter struct {
	buf  []byte
	acc  uint64
	nacc int
}

func (w *bitWriter) write(v uint64, n int) {
	w.acc |= v << w.nacc
	w.nacc += n
	for w.nacc >= 8 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc >>= 8
		w.nacc -= 8
	}
}

func (w *bitWriter) flush() []byte {
	if w.nacc > 0 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc, w.nacc = 0, 0
	}
	return w.buf
}

type bitReader struct {
	b    []byte
	pos  int
	acc  uint64
	nacc int
}

func (r *bitReader) read(n int) uint64 {
	for r.nacc < n {
		var x byte
		if r.pos < len(r.b) {
			x = r.b[r.pos]
			r.pos++
		}
		r.acc |= uint64(x) << r.nacc
		r.nacc += 8
	}
	v := r.acc & (1<<n - 1)
	r.acc >>= n
	r.nacc -= n
	return v
}

// rest returns the unread bits (must be zero padding).
func (r *bitReader) rest() uint64 { return r.acc }
