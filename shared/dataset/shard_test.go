package dataset

import "testing"

func TestShardRoundTrip(t *testing.T) {
	set := Set{Name: "s", Features: 4, Classes: 3, Samples: []Sample{
		{X: []float32{0, 1, 0.5, 0.2}, Label: 2}, {X: []float32{1, 1, 0, 0}, Label: 0}}}
	blob, err := EncodeShard(set)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeShard(blob, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Samples) != 2 || got.Samples[0].Label != 2 || got.Samples[1].X[0] != 1 {
		t.Fatalf("decoded %+v", got.Samples)
	}
	// round(255 x)/255 is within 1/510 of x (0.5 is the worst case,
	// exactly 1/510 away); 1e-6 covers float32 rounding.
	if d := got.Samples[0].X[2] - 0.5; d > 1.0/510+1e-6 || d < -1.0/510-1e-6 {
		t.Errorf("feature 0.5 decoded as %v", got.Samples[0].X[2])
	}
	for _, bad := range [][]byte{nil, {1, 2}, {255, 255, 255, 255, 0}, blob[:len(blob)-1]} {
		if _, err := DecodeShard(bad, 3); err == nil {
			t.Errorf("DecodeShard(%v...) accepted a bad blob", bad[:min(len(bad), 8)])
		}
	}
}
