package algo

import (
	"testing"

	"browserfl/shared/session"
)

// localParams is a "local" session: b = 6 samples per round in K = 3 step
// batches of 2.
func localParams() session.Params {
	p := baseParams("local")
	p.Batch, p.LocalSteps = 6, 3
	p.Diameter = 0
	return p
}

func TestLocalValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*session.Params)
		ok   bool
	}{
		{"K divides b", func(p *session.Params) {}, true},
		{"K = 0 means b", func(p *session.Params) { p.LocalSteps = 0 }, true},
		{"K = b", func(p *session.Params) { p.LocalSteps = 6 }, true},
		{"K does not divide b", func(p *session.Params) { p.LocalSteps = 4 }, false},
		{"K > b", func(p *session.Params) { p.LocalSteps = 12 }, false},
		{"K < 0", func(p *session.Params) { p.LocalSteps = -1 }, false},
		{"error feedback", func(p *session.Params) { p.Compressor = "ef+randk:0.5" }, false},
		{"no privacy target", func(p *session.Params) { p.Rho = 0 }, false},
		{"K on another algorithm", func(p *session.Params) { p.Algorithm = "noisysgd" }, false},
	}
	for _, tc := range tests {
		p := localParams()
		tc.edit(&p)
		if err := Validate(p); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok = %v", tc.name, err, tc.ok)
		}
	}
	p := localParams()
	if !p.SinglePass() || !p.ParallelComposition() || p.ComposedReleases() != 1 || !Private(p) || Trusted(p) {
		t.Error("local must be a private, single-pass, parallel-composition algorithm")
	}
	if p.StepBatch() != 2 {
		t.Errorf("StepBatch = %d, want 6/3", p.StepBatch())
	}
}
