package task

import (
	"slices"
	"testing"
)

// A RowSet answers with exactly the samples of the set Set encodes from
// the same rows, for any subset and any head, and refuses what Set
// refuses.
func TestRowSetMatchesSet(t *testing.T) {
	b, err := LookupBuiltin("text")
	if err != nil {
		t.Fatal(err)
	}
	d := b.Def
	rows := Rows{Values: [][]string{{"house"}, {"maison"}, {"haus"}, {"casa"}, {"cappello"}, {"sombrero"}},
		Labels: []int{0, 2, 1, 3, 4, 3}}
	full, err := d.Set("words", rows)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := d.RowSet("words", rows)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Len() != full.Len() || !slices.Equal(rs.Labels(), full.Labels()) {
		t.Fatalf("len %d labels %v, want %d %v", rs.Len(), rs.Labels(), full.Len(), full.Labels())
	}
	same := func(what string, got, want []float32, gl, wl int) {
		t.Helper()
		if !slices.Equal(got, want) || gl != wl {
			t.Fatalf("%s differs from Set's", what)
		}
	}
	for _, idx := range [][]int{{}, {0}, {5, 0, 3, 3}, {1, 2, 3, 4, 5, 0}} {
		got, err := rs.Subset(idx)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := full.Subset(idx)
		if got.Name != want.Name || got.Features != want.Features || got.Classes != want.Classes || got.Len() != want.Len() {
			t.Fatalf("subset %v: %q %d features %d classes %d samples", idx, got.Name, got.Features, got.Classes, got.Len())
		}
		for k := range idx {
			same("a subset's sample", got.Samples[k].X, want.Samples[k].X, got.Samples[k].Label, want.Samples[k].Label)
		}
	}
	for _, n := range []int{0, 2, 6, 9} {
		got, err := rs.Take(n)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := full.Take(n)
		if got.Len() != want.Len() {
			t.Fatalf("Take(%d): %d samples, want %d", n, got.Len(), want.Len())
		}
		for k := range want.Samples {
			same("a head's sample", got.Samples[k].X, want.Samples[k].X, got.Samples[k].Label, want.Samples[k].Label)
		}
	}
	if _, err := rs.Take(-1); err == nil {
		t.Error("Take(-1) accepted")
	}
	for _, idx := range [][]int{{-1}, {6}} {
		if _, err := rs.Subset(idx); err == nil {
			t.Errorf("subset %v accepted", idx)
		}
	}
	for _, bad := range []Rows{
		{Values: [][]string{{"house"}}, Labels: []int{5}},
		{Values: [][]string{{"house"}}, Labels: []int{-1}},
		{Values: [][]string{{"house"}, {"haus"}}, Labels: []int{0}},
		{Values: [][]string{{"house", "haus"}}, Labels: []int{0}},
	} {
		_, errSet := d.Set("x", bad)
		if _, err := d.RowSet("x", bad); err == nil || errSet == nil {
			t.Errorf("%v: RowSet %v, Set %v; want both refused", bad, err, errSet)
		}
	}
}
