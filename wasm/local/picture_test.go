package local

import (
	"testing"

	"browserfl/shared/model"
)

func TestPicture(t *testing.T) {
	got := Picture([]float64{0, 1, -1, 0.5, -2})
	want := []byte{128, 192, 65, 160, 1}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Picture = %v, want %v", got, want)
		}
	}
	for _, b := range Picture(make([]float64, 4)) {
		if b != 128 {
			t.Fatal("zeros must draw 128")
		}
	}
}

// UpdatePictures draws the row whose clean weights moved most, at the
// model's layout, from both vectors.
func TestUpdatePictures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stride   int
		perClass bool
	}{{model.NameLogReg, Features + 1, true}, {model.NameUnitLogReg, Features + 1, true}, {model.NameMLP, Features, false}} {
		m, err := model.New(tc.name, Features, Classes)
		if err != nil {
			t.Fatal(err)
		}
		clean, sent := make([]float64, m.Dim()), make([]float64, m.Dim())
		const want = 7
		for i := range Features {
			clean[want*tc.stride+i] = float64(i%5) - 2
			clean[2*tc.stride+i] = 0.1
			sent[want*tc.stride+i] = float64(i % 3)
		}
		row, perClass, c, s, err := UpdatePictures(tc.name, Classes, clean, sent)
		if err != nil {
			t.Fatal(err)
		}
		if row != want || perClass != tc.perClass {
			t.Errorf("%s: row %d (per class %v), want %d (%v)", tc.name, row, perClass, want, tc.perClass)
		}
		if c[0] != 1 || c[4] != 255 || s[0] != 128 || s[2] != 255 {
			t.Errorf("%s: pictures start %v and %v", tc.name, c[:5], s[:3])
		}
	}
	if _, _, _, _, err := UpdatePictures(model.NameLogReg, Classes, make([]float64, 100), make([]float64, 100)); err == nil {
		t.Error("a vector of the wrong size was drawn")
	}
}
