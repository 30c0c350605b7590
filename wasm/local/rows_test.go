package local

import (
	"slices"
	"strings"
	"testing"

	"browserfl/shared/task"
)

// TestShuffleRowsKeepsPairs: shuffling moves each row's values with its
// label, keeps every row, and depends on the seed only.
func TestShuffleRowsKeepsPairs(t *testing.T) {
	var r task.Rows
	for i := range 50 {
		r.Values = append(r.Values, []string{strings.Repeat("w", i+1)})
		r.Labels = append(r.Labels, i)
	}
	a := JoinRows(r, task.Rows{})
	ShuffleRows(a, [32]byte{1})
	moved := 0
	for i := range a.Labels {
		if len(a.Values[i][0]) != a.Labels[i]+1 {
			t.Fatalf("row %d: value %q with label %d", i, a.Values[i][0], a.Labels[i])
		}
		if a.Labels[i] != i {
			moved++
		}
	}
	if moved == 0 {
		t.Error("nothing moved")
	}
	sorted := slices.Clone(a.Labels)
	slices.Sort(sorted)
	if !slices.Equal(sorted, r.Labels) {
		t.Error("rows lost or repeated")
	}
	b := JoinRows(r, task.Rows{})
	ShuffleRows(b, [32]byte{1})
	if !slices.Equal(a.Labels, b.Labels) {
		t.Error("the same seed gave two orders")
	}
	if j := JoinRows(r, b); j.Len() != 100 || j.Labels[50] != b.Labels[0] {
		t.Errorf("JoinRows: %d rows", j.Len())
	}
}

// TestRefusedWords names the file and line of each refused line.
func TestRefusedWords(t *testing.T) {
	b, err := task.LookupBuiltin("tabular")
	if err != nil {
		t.Fatal(err)
	}
	csv := "carat,cut,color,clarity,depth,table,price\n9,Ideal,E,VS1,61,57,under $1000\n1,Ideal,E,VS1,61,57,under $1000\n1,Superb,E,VS1,61,57,under $1000\n"
	rows, refused, err := b.Def.ReadCSV(strings.NewReader(csv))
	if err != nil || rows.Len() != 1 {
		t.Fatalf("%d rows, %v", rows.Len(), err)
	}
	got := RefusedWords("mine.csv", refused)
	want := []string{
		"mine.csv, line 2: carat: 9 is outside the range; type a number from 0.2 to 3",
		`mine.csv, line 4: cut: "Superb" is not one of the choices: Fair, Good, Very Good, Premium, Ideal`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("RefusedWords = %q, want %q", got, want)
	}
}
