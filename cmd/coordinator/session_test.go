package main

import (
	"io"
	"slices"
	"testing"
	"time"

	"browserfl/shared/dataset"
)

// TestAssembleSession: the session run serves is the flags' session
// completed for the task's data (its shape, the model's dimension), its
// labels, the round deadline, the mode (trusted or not) and the demo
// shards; a session a device would refuse is refused here.
func TestAssembleSession(t *testing.T) {
	train := &dataset.Compact{Features: 784, Classes: 10}
	tests := []struct {
		name      string
		args      []string
		own       string // the session's own labels
		labels    string // the task's
		deadline  time.Duration
		wantDim   int
		trusted   bool
		shards    int
		wantLabel string
		wantErr   bool
	}{
		{"demo defaults", nil, "", "a,b,c,d,e,f,g,h,i,j", 20 * time.Second, 7850, false, 120, "a,b,c,d,e,f,g,h,i,j", false},
		{"the session's own labels", nil, "0,1,2,3,4,5,6,7,8,9", "a,b,c,d,e,f,g,h,i,j", 20 * time.Second, 7850, false, 120, "0,1,2,3,4,5,6,7,8,9", false},
		{"labels that do not fit", nil, "a,b", "", time.Second, 0, false, 0, "", true},
		{"trusted server", []string{"-algorithm", "trusted"}, "", "", 5 * time.Second, 7850, true, 120, "", false},
		{"mlp", []string{"-model", "mlp"}, "", "", time.Second, 784*64 + 64 + 64*10 + 10, false, 120, "", false},
		{"no demo shards", []string{"-demo-shards", "-1"}, "", "", time.Second, 7850, false, 0, "", false},
		{"some demo shards", []string{"-demo-shards", "7"}, "", "", time.Second, 7850, false, 7, "", false},
		{"sized by M", []string{"-M", "50"}, "", "", time.Second, 7850, false, 200, "", false},
		{"batch 0", []string{"-b", "0"}, "", "", time.Second, 0, false, 0, "", true},
		{"unknown model", []string{"-model", "resnet"}, "", "", time.Second, 0, false, 0, "", true},
		// An assumed signal bound only with demo shards dealt nearly iid.
		{"signal bound, iid demo shards", []string{"-signal-bound", "0.25", "-demo-alpha", "100"}, "", "", time.Second, 7850, false, 120, "", false},
		{"signal bound, skewed demo shards", []string{"-signal-bound", "0.25"}, "", "", time.Second, 0, false, 0, "", true},
		{"signal bound, alpha just under", []string{"-signal-bound", "0.25", "-demo-alpha", "99"}, "", "", time.Second, 0, false, 0, "", true},
		{"signal bound, no demo shards", []string{"-signal-bound", "0.25", "-demo-alpha", "100", "-demo-shards", "-1"}, "", "", time.Second, 0, false, 0, "", true},
		{"negative signal bound", []string{"-signal-bound", "-1", "-demo-alpha", "100"}, "", "", time.Second, 0, false, 0, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parse(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			o.Session.Labels = tc.own
			td := taskData{features: train.Features, classes: train.Classes, labels: tc.labels, train: train}
			a, err := assembleSession(o, td, tc.deadline)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("assembled %+v, want an error", a.sess)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := a.sess
			if s.Features != 784 || s.Classes != 10 || s.Dim != tc.wantDim || a.mdl.Dim() != tc.wantDim {
				t.Errorf("shape: features %d, classes %d, dim %d (model %d); want 784, 10, %d", s.Features, s.Classes, s.Dim, a.mdl.Dim(), tc.wantDim)
			}
			if s.DeadlineMillis != int(tc.deadline.Milliseconds()) {
				t.Errorf("deadline %d ms, want %v", s.DeadlineMillis, tc.deadline)
			}
			if s.Trusted != tc.trusted {
				t.Errorf("trusted %v, want %v", s.Trusted, tc.trusted)
			}
			if a.shards != tc.shards || s.DemoShards != (tc.shards > 0) {
				t.Errorf("demo shards %d (session says %v), want %d", a.shards, s.DemoShards, tc.shards)
			}
			if want := s.SignalBound; s.SignalBound != want || (want > 0) != slices.Contains(tc.args, "-signal-bound") {
				t.Errorf("signal bound %v on the wire, %v for the checker; flags %q", s.SignalBound, want, tc.args)
			}
			if s.Labels != tc.wantLabel {
				t.Errorf("labels %q, want %q", s.Labels, tc.wantLabel)
			}
		})
	}
}
