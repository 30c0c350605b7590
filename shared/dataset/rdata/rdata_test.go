package rdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// enc writes R's XDR serialization, enough to build test objects.
type enc struct{ bytes.Buffer }

func (e *enc) i(v int32) { binary.Write(&e.Buffer, binary.BigEndian, v) }
func (e *enc) header() {
	e.WriteString("X\n")
	e.i(3)
	e.i(0x040201)
	e.i(0x030500)
	e.i(5)
	e.WriteString("UTF-8")
}
func (e *enc) char(s string) { e.i(typeChar | 1<<12 | 1<<15); e.i(int32(len(s))); e.WriteString(s) }
func (e *enc) sym(s string)  { e.i(typeSym); e.char(s) }
func (e *enc) strs(attr bool, ss ...string) {
	f := int32(typeString)
	if attr {
		f |= flagHasAttr
	}
	e.i(f)
	e.i(int32(len(ss)))
	for _, s := range ss {
		e.char(s)
	}
}

// frame serializes a two-column data frame: a double column "w" and an
// ordered factor "g" with levels a < b < c; names and class use a fresh
// symbol per attribute.
func frame(w []float64, g []int32) []byte {
	var e enc
	e.header()
	e.i(typeVector | 1<<8 | flagHasAttr)
	e.i(2)
	// column w
	e.i(typeReal)
	e.i(int32(len(w)))
	for _, x := range w {
		binary.Write(&e.Buffer, binary.BigEndian, math.Float64bits(x))
	}
	// column g: an integer vector with attributes levels and class
	e.i(typeInt | 1<<8 | flagHasAttr)
	e.i(int32(len(g)))
	for _, x := range g {
		e.i(x)
	}
	e.i(typeList | flagHasTag)
	e.sym("levels")
	e.strs(false, "a", "b", "c")
	e.i(typeList | flagHasTag)
	e.sym("class")
	e.strs(false, "ordered", "factor")
	e.i(codeNilValue)
	// the frame's attributes: names, class, row.names (compact form)
	e.i(typeList | flagHasTag)
	e.sym("names")
	e.strs(false, "w", "g")
	e.i(typeList | flagHasTag)
	e.i(codeRef | 2<<8) // "class", the second symbol read
	e.strs(false, "data.frame")
	e.i(typeList | flagHasTag)
	e.sym("row.names")
	e.i(typeInt)
	e.i(2)
	e.i(naInt)
	e.i(-int32(len(w)))
	e.i(codeNilValue)
	return e.Bytes()
}

func TestDataFrame(t *testing.T) {
	data := frame([]float64{0.5, 1.25, math.Inf(1)}, []int32{1, 3, naInt})
	o, err := Unserialize(data)
	if err != nil {
		t.Fatal(err)
	}
	f, err := DataFrame(o)
	if err != nil {
		t.Fatal(err)
	}
	if f.Rows != 3 || len(f.Columns) != 2 {
		t.Fatalf("%d rows, %d columns; want 3, 2", f.Rows, len(f.Columns))
	}
	w, _ := f.Column("w")
	if w.Reals[0] != 0.5 || w.Reals[1] != 1.25 || !math.IsInf(w.Reals[2], 1) {
		t.Errorf("w = %v", w.Reals)
	}
	g, ok := f.Column("g")
	if !ok || !g.Factor() || !g.Ordered || len(g.Levels) != 3 || g.Codes[0] != 0 || g.Codes[1] != 2 || g.Codes[2] != -1 {
		t.Errorf("g = %+v", g)
	}
}

func TestMalformed(t *testing.T) {
	good := frame([]float64{1, 2}, []int32{1, 2})
	cases := map[string]struct {
		data []byte
		want error
	}{
		"empty":         {nil, ErrFormat},
		"ascii form":    {[]byte("A\n3\n"), ErrUnsupported},
		"not R":         {[]byte("PK\x03\x04"), ErrFormat},
		"truncated":     {good[:len(good)-9], ErrFormat},
		"version 4":     {append([]byte("X\n\x00\x00\x00\x04"), good[6:]...), ErrUnsupported},
		"huge length":   {append(append([]byte{}, good[:23]...), 0, 0, 0, typeVector, 0x7f, 0xff, 0xff, 0xff), ErrFormat},
		"bad reference": {append(append([]byte{}, good[:23]...), 0, 0, 0x09, 0xff), ErrFormat},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Unserialize(tc.data)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	// A factor code beyond its levels is refused by DataFrame.
	o, err := Unserialize(frame([]float64{1}, []int32{4}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DataFrame(o); !errors.Is(err, ErrFormat) {
		t.Fatalf("code 4 of 3 levels: err = %v, want ErrFormat", err)
	}
}

// TestDeepNesting: a list nested past MaxDepth is an error, not a stack
// overflow.
func TestDeepNesting(t *testing.T) {
	var e enc
	e.header()
	for i := 0; i < MaxDepth+10; i++ {
		e.i(typeVector)
		e.i(1)
	}
	e.i(codeNilValue)
	if _, err := Unserialize(e.Bytes()); !errors.Is(err, ErrFormat) {
		t.Fatalf("err = %v, want ErrFormat", err)
	}
}

func FuzzUnserialize(f *testing.F) {
	f.Add(frame([]float64{1, 2}, []int32{1, 2}))
	f.Add([]byte("X\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := Unserialize(data)
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("error %v wraps neither ErrFormat nor ErrUnsupported", err)
			}
			return
		}
		DataFrame(o) // must not panic
	})
}

// TestDiamondsRealData reads the diamonds table from the database
// scripts/tasks.sh unpacks (make setup). Skipped only when the data is
// absent and BFL_REQUIRE_DATA is not set; make test sets it.
func TestDiamondsRealData(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "data", "diamonds")
	o, err := LazyLoad(dir, "Rdata", "diamonds")
	if errors.Is(err, os.ErrNotExist) && os.Getenv("BFL_REQUIRE_DATA") == "" {
		t.Skipf("skipped: %v; run make setup (make test requires it)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	f, err := DataFrame(o)
	if err != nil {
		t.Fatal(err)
	}
	if f.Rows != 53940 || len(f.Columns) != 10 {
		t.Fatalf("%d rows, %d columns; want 53940, 10", f.Rows, len(f.Columns))
	}
	cut, _ := f.Column("cut")
	price, _ := f.Column("price")
	carat, _ := f.Column("carat")
	// The first diamond of the table: 0.23 carat, Ideal, $326.
	if len(cut.Levels) != 5 || cut.Levels[cut.Codes[0]] != "Ideal" || price.Reals[0] != 326 || carat.Reals[0] != 0.23 {
		t.Errorf("first diamond: cut %v, price %v, carat %v", cut.Levels[cut.Codes[0]], price.Reals[0], carat.Reals[0])
	}
	if _, err := LazyLoad(dir, "Rdata", "no-such-table"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing variable: err = %v, want os.ErrNotExist", err)
	}
}

// TestCompactSequencesBudget: many compact sequences, each small in the
// input, cannot together expand beyond 64 times the input (each one alone
// fits, all of them do not).
func TestCompactSequencesBudget(t *testing.T) {
	build := func(k int, n float64) []byte {
		var e enc
		e.header()
		e.i(typeVector)
		e.i(int32(k))
		for j := 0; j < k; j++ {
			e.i(codeAltrep)
			e.i(typeList)
			if j == 0 {
				e.sym("compact_realseq")
			} else {
				e.i(codeRef | 1<<8)
			}
			e.i(typeList)
			if j == 0 {
				e.sym("base")
			} else {
				e.i(codeRef | 2<<8)
			}
			e.i(typeList)
			e.i(typeInt)
			e.i(1)
			e.i(14)
			e.i(codeNilValue)
			e.i(typeReal)
			e.i(3)
			for _, x := range []float64{n, 1, 1} {
				binary.Write(&e.Buffer, binary.BigEndian, math.Float64bits(x))
			}
			e.i(codeNilValue)
		}
		return e.Bytes()
	}
	one := build(1, 1000)
	if o, err := Unserialize(one); err != nil || len(o.Items[0].Reals) != 1000 {
		t.Fatalf("one sequence of 1000: %v", err)
	}
	many := build(40, 0)
	n := float64(len(many) * 64 / 20) // each fits alone; 40 of them are twice the budget
	if _, err := Unserialize(build(40, n)); !errors.Is(err, ErrFormat) {
		t.Fatalf("40 sequences of %g elements from %d bytes: err = %v, want ErrFormat", n, len(many), err)
	}
}
