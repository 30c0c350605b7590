package device

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/plan"
	"browserfl/shared/wire"
)

// featureSession is the demo session with a model over the scattering
// features (what `coordinator -features scatter` serves).
func featureSession() wire.SessionParams {
	s := demoSession()
	s.Transform, s.Features, s.Dim = plan.FeaturesScatter, 3969, 39700
	return s
}

// pictures returns n random 28 x 28 pictures with labels i mod 10.
func pictures(n int) []dataset.Sample {
	rng := rand.New(rand.NewPCG(4, 5))
	out := make([]dataset.Sample, n)
	for i := range out {
		x := make([]float32, 784)
		for k := range x {
			x[k] = rng.Float32()
		}
		out[i] = dataset.Sample{X: x, Label: i % 10}
	}
	return out
}

// restored builds a runtime whose saved state holds session s, as a
// device that joined it earlier (New sets the session up again).
func restored(t *testing.T, s wire.SessionParams, cfg Config) (*Runtime, error) {
	t.Helper()
	saved, err := json.Marshal(State{DeviceID: "d1", Secret: "s", Session: &s})
	if err != nil {
		t.Fatal(err)
	}
	st := &MemStorage{}
	if err := st.Save(context.Background(), saved); err != nil {
		t.Fatal(err)
	}
	cfg.URL, cfg.JoinCode, cfg.Storage = "ws://127.0.0.1:1/ws", "c", st
	return New(context.Background(), cfg)
}

// TestRuntimeTrainsOnFeatures: in a feature session the device's
// minibatches (from a cursor, wrapping around its data) hold the
// features of its own pictures, equal bit for bit to plan.Features' (the
// coordinator's and the page's function), labels and order kept, and its
// pictures are left as they were; in a pixel session the minibatches
// hold the pictures themselves.
func TestRuntimeTrainsOnFeatures(t *testing.T) {
	pics := pictures(4)
	keep := append([]float32{}, pics[3].X...)
	rt, err := restored(t, featureSession(), Config{Data: pics})
	if err != nil {
		t.Fatal(err)
	}
	f, err := plan.NewFeatures(plan.FeaturesScatter)
	if err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	batch, err := rt.minibatchLocked(3, 1)
	rt.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	for j, got := range batch {
		i := 1 + j
		s := pics[i]
		want, err := f.Picture(s.X)
		if err != nil {
			t.Fatal(err)
		}
		if got.Label != s.Label || len(got.X) != len(want) {
			t.Fatalf("sample %d: label %d, %d values; want %d, %d", i, got.Label, len(got.X), s.Label, len(want))
		}
		for k := range want {
			if got.X[k] != want[k] {
				t.Fatalf("sample %d feature %d = %v, want %v", i, k, got.X[k], want[k])
			}
		}
	}
	for k, v := range keep {
		if pics[3].X[k] != v {
			t.Fatalf("the device's picture 3 changed at %d", k)
		}
	}
	raw, err := restored(t, demoSession(), Config{Data: pics})
	if err != nil {
		t.Fatal(err)
	}
	raw.mu.Lock()
	batch, err = raw.minibatchLocked(2, 1)
	raw.mu.Unlock()
	if err != nil || len(batch) != 2 || &batch[0].X[0] != &pics[1].X[0] || &batch[1].X[0] != &pics[2].X[0] {
		t.Errorf("a pixel session's minibatch (%v) is not the pictures themselves", err)
	}
	// A single-pass session's minibatch never wraps around to samples
	// used before (exhaustedLocked stops the round first; this is the
	// second line).
	raw.mu.Lock()
	_, err = raw.minibatchLocked(2, 3)
	raw.mu.Unlock()
	if err == nil {
		t.Error("a single-pass minibatch of 2 from cursor 3 of 4 samples was taken: it reuses sample 0")
	}
}

// TestRuntimeRefusesFeatures: a device refuses a session whose
// transform it does not know (ErrWrongData, plan.ErrUnknownFeatures),
// features announced with another dimension, features of pictures for
// a device holding rows, and pictures of another size; the owner's
// pre-join check (CheckSession) refuses the unknown kind too.
func TestRuntimeRefusesFeatures(t *testing.T) {
	_, def := rowSession(t, "tabular")
	unknown := featureSession()
	unknown.Transform = "wavelets"
	wrongDim := featureSession()
	wrongDim.Features, wrongDim.Dim = 3970, 39710
	small := pictures(2)
	for i := range small {
		small[i].X = small[i].X[:783]
	}
	tests := []struct {
		name string
		s    wire.SessionParams
		cfg  Config
		want error
	}{
		{"unknown transform", unknown, Config{Data: pictures(2)}, plan.ErrUnknownFeatures},
		{"another dimension", wrongDim, Config{Data: pictures(2)}, plan.ErrFeaturesMismatch},
		{"rows in a feature session", featureSession(), Config{Data: rowData(t, def), Task: def}, ErrWrongData},
		{"pictures of 783 values", featureSession(), Config{Data: small}, ErrWrongData},
	}
	for _, tc := range tests {
		_, err := restored(t, tc.s, tc.cfg)
		if !errors.Is(err, ErrWrongData) || !errors.Is(err, tc.want) {
			t.Errorf("%s: New = %v, want ErrWrongData and %v", tc.name, err, tc.want)
		}
	}
	if err := CheckSession(unknown, Policy{}); !errors.Is(err, ErrRefused) || !errors.Is(err, plan.ErrUnknownFeatures) {
		t.Errorf("CheckSession(unknown transform) = %v, want ErrRefused and plan.ErrUnknownFeatures", err)
	}
	if err := CheckSession(featureSession(), Policy{}); err != nil {
		t.Errorf("CheckSession(scatter) = %v", err)
	}
}
