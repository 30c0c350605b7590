package rdata

import (
	"fmt"
	"math"
)

// Column is one column of a data frame: numbers (integers and logicals
// converted, NA as NaN), a factor (Codes index Levels; -1 is NA) or
// strings.
type Column struct {
	Name    string
	Reals   []float64
	Codes   []int
	Levels  []string
	Ordered bool
	Strings []string
}

// Factor reports whether the column is a factor.
func (c Column) Factor() bool { return c.Levels != nil }

// Frame is a data frame (or a tibble) read from R.
type Frame struct {
	Rows    int
	Columns []Column
}

// Column returns the column of that name.
func (f *Frame) Column(name string) (Column, bool) {
	for _, c := range f.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// DataFrame reads a data frame: a list of equally long columns with names
// and class "data.frame".
func DataFrame(o *Object) (*Frame, error) {
	if o == nil || o.Type != typeVector || !o.Inherits("data.frame") {
		return nil, fmt.Errorf("%w: not a data frame", ErrFormat)
	}
	names := o.Names()
	if len(names) != len(o.Items) {
		return nil, fmt.Errorf("%w: %d names for %d columns", ErrFormat, len(names), len(o.Items))
	}
	f := &Frame{Rows: -1}
	for i, v := range o.Items {
		c, err := column(names[i], v)
		if err != nil {
			return nil, err
		}
		n := max(len(c.Reals), len(c.Codes), len(c.Strings))
		if f.Rows >= 0 && n != f.Rows {
			return nil, fmt.Errorf("%w: column %q has %d rows, the others %d", ErrFormat, c.Name, n, f.Rows)
		}
		f.Rows = n
		f.Columns = append(f.Columns, c)
	}
	if f.Rows < 0 {
		f.Rows = 0
	}
	return f, nil
}

func column(name string, v *Object) (Column, error) {
	c := Column{Name: name}
	switch v.Type {
	case typeInt, typeLogical:
		if lv := v.Attribute("levels"); v.Type == typeInt && lv != nil && v.Inherits("factor") {
			if lv.Type != typeString {
				return c, fmt.Errorf("%w: factor %q levels of type %d", ErrFormat, name, lv.Type)
			}
			c.Levels, c.Ordered = lv.Strings, v.Inherits("ordered")
			c.Codes = make([]int, len(v.Ints))
			for i, x := range v.Ints {
				switch {
				case x == naInt:
					c.Codes[i] = -1
				case x < 1 || int(x) > len(c.Levels):
					return c, fmt.Errorf("%w: factor %q code %d of %d levels", ErrFormat, name, x, len(c.Levels))
				default:
					c.Codes[i] = int(x) - 1
				}
			}
			return c, nil
		}
		c.Reals = make([]float64, len(v.Ints))
		for i, x := range v.Ints {
			if x == naInt {
				c.Reals[i] = math.NaN()
			} else {
				c.Reals[i] = float64(x)
			}
		}
	case typeReal:
		c.Reals = v.Reals
	case typeString:
		c.Strings = v.Strings
	default:
		return c, fmt.Errorf("%w: column %q of R type %d", ErrUnsupported, name, v.Type)
	}
	return c, nil
}
