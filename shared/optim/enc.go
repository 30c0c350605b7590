package optim

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// wbuf and rbuf are the little-endian codec of the marshalled states.

type wbuf struct{ b []byte }

func (w *wbuf) u8(v uint8)     { w.b = append(w.b, v) }
func (w *wbuf) u64(v uint64)   { w.b = binary.LittleEndian.AppendUint64(w.b, v) }
func (w *wbuf) i64(v int)      { w.u64(uint64(int64(v))) }
func (w *wbuf) f64(v float64)  { w.u64(math.Float64bits(v)) }
func (w *wbuf) bool(v bool)    { w.u8(map[bool]uint8{false: 0, true: 1}[v]) }
func (w *wbuf) bytes(v []byte) { w.u64(uint64(len(v))); w.b = append(w.b, v...) }
func (w *wbuf) str(s string)   { w.bytes([]byte(s)) }
func (w *wbuf) vec(v []float64) {
	w.u64(uint64(len(v)))
	w.b = slices.Grow(w.b, 8*len(v)) // one growth for the whole vector
	for _, x := range v {
		w.f64(x)
	}
}

type rbuf struct {
	b   []byte
	err error
}

func (r *rbuf) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *rbuf) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail("truncated state: need %d bytes, have %d", n, len(r.b))
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *rbuf) u8() uint8 {
	v := r.take(1)
	if v == nil {
		return 0
	}
	return v[0]
}

func (r *rbuf) u64() uint64 {
	v := r.take(8)
	if v == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(v)
}

// count reads a non-negative integer no larger than max.
func (r *rbuf) count(what string, max int) int {
	v := int64(r.u64())
	if r.err == nil && (v < 0 || v > int64(max)) {
		r.fail("%s = %d outside [0, %d]", what, v, max)
		return 0
	}
	return int(v)
}

func (r *rbuf) f64(what string) float64 {
	v := math.Float64frombits(r.u64())
	if r.err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
		r.fail("%s is not finite", what)
	}
	return v
}

func (r *rbuf) bool() bool {
	v := r.u8()
	if r.err == nil && v > 1 {
		r.fail("bad boolean %d", v)
	}
	return v == 1
}

func (r *rbuf) bytes(max int) []byte {
	n := r.count("byte length", max)
	return r.take(n)
}

// vec reads a vector whose length must be 0 or want.
func (r *rbuf) vec(what string, want int) []float64 {
	n := r.count(what+" length", want)
	if r.err != nil {
		return nil
	}
	if n != 0 && n != want {
		r.fail("%s has length %d, want 0 or %d", what, n, want)
		return nil
	}
	if n == 0 {
		return nil
	}
	raw := r.take(8 * n)
	if raw == nil {
		return nil
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		if math.IsNaN(v[i]) || math.IsInf(v[i], 0) {
			r.fail("%s[%d] is not finite", what, i)
			return nil
		}
	}
	return v
}

func (r *rbuf) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
	return r.err
}
