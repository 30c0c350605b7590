package task

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestCSVRoundTrip(t *testing.T) {
	d, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	rows := Rows{Values: [][]string{{"4.5", "4", "meow, purr"}, {"30", "4", "woof"}, {"0.1", "0", "blub \"blub\""}}, Labels: []int{0, 1, 2}}
	var b bytes.Buffer
	if err := d.WriteCSV(&b, rows); err != nil {
		t.Fatal(err)
	}
	got, refused, err := d.ReadCSV(&b)
	if err != nil || len(refused) != 0 {
		t.Fatalf("ReadCSV: %v, refused %v", err, refused)
	}
	if got.Len() != 3 {
		t.Fatalf("%d rows, want 3", got.Len())
	}
	for i := range rows.Values {
		if strings.Join(got.Values[i], "|") != strings.Join(rows.Values[i], "|") || got.Labels[i] != rows.Labels[i] {
			t.Errorf("row %d: %q %d, want %q %d", i, got.Values[i], got.Labels[i], rows.Values[i], rows.Labels[i])
		}
	}
	set, err := d.Set("pets", got)
	if err != nil || set.Len() != 3 || set.Features != d.Dim() || set.Classes != 4 {
		t.Fatalf("Set: %v, %d samples", err, set.Len())
	}
}

// TestCSVRefusesRows: bad rows are left out with their line and reason;
// the good ones are kept.
func TestCSVRefusesRows(t *testing.T) {
	d, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	in := "Pet, SOUND ,weight,legs\n" + // any order, any case
		"cat,meow,4,4\n" +
		"dog,woof,heavy,4\n" + // not a number
		"hamster,squeak,0.1,4\n" + // unknown label
		"fish,blub,1\n" + // a value missing
		"bird,tweet,0.05,2\n"
	rows, refused, err := d.ReadCSV(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if rows.Len() != 2 || rows.Labels[0] != 0 || rows.Labels[1] != 3 || rows.Values[1][0] != "0.05" {
		t.Fatalf("kept %+v, want the cat and the bird", rows)
	}
	lines := []int{}
	for _, e := range refused {
		lines = append(lines, e.Line)
		var re *RowError
		if !errors.As(e, &re) {
			t.Errorf("line %d: %v is not a RowError", e.Line, e.Err)
		}
	}
	if len(lines) != 3 || lines[0] != 3 || lines[1] != 4 || lines[2] != 5 {
		t.Errorf("refused lines %v, want [3 4 5]", lines)
	}
}

// TestCSVStrayQuotesAndManyRefusals: a stray quote is part of its value
// (the line is kept), and a file of many bad lines reports MaxRefused of
// them one by one and counts the rest, so a large bad file cannot fill
// the page's memory with errors.
func TestCSVStrayQuotesAndManyRefusals(t *testing.T) {
	d, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	rows, refused, err := d.ReadCSV(strings.NewReader("weight,legs,sound,pet\n5,4,me\"ow,cat\n6,4,purr,cat\n"))
	if err != nil || len(refused) != 0 || rows.Len() != 2 || rows.Values[0][2] != "me\"ow" {
		t.Fatalf("stray quote: %v, refused %v, rows %+v", err, refused, rows)
	}
	in := "weight,legs,sound,pet\n" + strings.Repeat("x,4,meow,cat\n", 1000) + "1,4,meow,cat\n"
	rows, refused, err = d.ReadCSV(strings.NewReader(in))
	if err != nil || rows.Len() != 1 {
		t.Fatalf("err %v, %d rows; want the last row kept", err, rows.Len())
	}
	if len(refused) != MaxRefused+1 || refused[MaxRefused].Line != 0 || !strings.Contains(refused[MaxRefused].Error(), "900 more") {
		t.Fatalf("%d refusals, last %v; want %d and a count of 900 more", len(refused), refused[len(refused)-1], MaxRefused)
	}
	if _, err := d.Set("x", Rows{Values: [][]string{{"1", "4", "a"}, {"1", "4", "b"}}, Labels: []int{0}}); err == nil {
		t.Error("Set accepted 2 rows of values with 1 label")
	}
	if err := d.WriteCSV(io.Discard, Rows{Values: [][]string{{"1", "4", "a"}}, Labels: []int{0, 1}}); err == nil {
		t.Error("WriteCSV accepted 1 row of values with 2 labels")
	}
}

func TestCSVRefusesFile(t *testing.T) {
	d, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string]string{
		"empty":          "",
		"missing column": "weight,legs,pet\n1,4,cat\n",
		"extra column":   "weight,legs,sound,pet,owner\n",
		"named twice":    "weight,weight,legs,sound,pet\n",
		"too large":      "weight,legs,sound,pet\n1,4,\"" + strings.Repeat("m", MaxCSVBytes) + "\",cat\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := d.ReadCSV(strings.NewReader(in)); !errors.Is(err, ErrCSV) {
				t.Fatalf("err = %v, want ErrCSV", err)
			}
		})
	}
}

func FuzzReadCSV(f *testing.F) {
	d, err := Parse([]byte(example))
	if err != nil {
		f.Fatal(err)
	}
	f.Add("weight,legs,sound,pet\n1,4,meow,cat\n")
	f.Fuzz(func(t *testing.T, in string) {
		rows, _, err := d.ReadCSV(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrCSV) {
				t.Fatalf("error %v does not wrap ErrCSV", err)
			}
			return
		}
		if _, err := d.Set("fuzz", rows); err != nil {
			t.Fatalf("accepted rows do not encode: %v", err)
		}
	})
}
