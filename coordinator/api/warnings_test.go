package api_test

import (
	"slices"
	"strings"
	"testing"

	"browserfl/coordinator/api"
	"browserfl/coordinator/metrics"
	"browserfl/coordinator/shards"
	"browserfl/coordinator/view"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/dataset"
	"browserfl/shared/wire"
)

// TestPlanWarnings: the demo session's plan (T = 200, b = 32, m = 10,
// min-devices 2) against classes that can and cannot finish it.
func TestPlanWarnings(t *testing.T) {
	demo := func(mod func(*api.PlanInput)) api.PlanInput {
		in := api.PlanInput{Rounds: 200, Batch: 32, Cohort: 10, MinDevices: 2}
		mod(&in)
		return in
	}
	fashion := func(handed, committed int) shards.Stats {
		// Shards sized as now: each covers the rounds left when handed out.
		return shards.Stats{HandedOut: handed, Samples: int64(handed) * int64(200-committed) * 32,
			Distinct: handed, TrainSamples: 60000, Epoch: 1}
	}
	tests := []struct {
		name      string
		in        api.PlanInput
		wantKinds []string
		wantText  []string // substrings of the texts, in order
	}{
		{"30 pages with new-style shards: finishes", demo(func(in *api.PlanInput) {
			in.Active, in.Shards = 30, fashion(30, 0)
		}), nil, nil},
		{"exactly the cohort, half way, data used as planned: finishes", demo(func(in *api.PlanInput) {
			in.Active, in.Committed, in.Shards, in.SamplesUsed = 10, 100, fashion(10, 0), 100*10*32
		}), nil, nil},
		{"nobody yet: the session waits", demo(func(in *api.PlanInput) {}),
			[]string{"devices"}, []string{"0 devices connected: a round needs at least 2"}},
		{"slow phones: 1 answering of 8 connected", demo(func(in *api.PlanInput) {
			in.Active, in.Connected, in.Shards = 1, 8, fashion(8, 0)
		}), []string{"devices"}, []string{"1 of 8 connected devices answering: a round needs at least 2 answering"}},
		{"fewer than the cohort", demo(func(in *api.PlanInput) {
			in.Active, in.Shards = 6, fashion(6, 0)
		}), []string{"devices"}, []string{"6 devices connected, fewer than the cohort m = 10"}},
		{"the old Dirichlet shards: 30 shards of 60,000 samples in all cannot cover 200 x 10 x 32", demo(func(in *api.PlanInput) {
			in.Active = 30
			in.Shards = shards.Stats{HandedOut: 30, Samples: 60000, Distinct: 30, TrainSamples: 60000, Epoch: 1}
		}), []string{"data"}, []string{"covers about 187 of the 200 rounds left at 320 samples a round: pages run out around round 187"}},
		{"late joiners sized for the rounds left, first pages gone: finishes", demo(func(in *api.PlanInput) {
			// 10 pages at round 0 (6,400 samples each), 10 more at round
			// 180 (20 rounds x 32 = 640 each), 180 rounds of 10 x 32 used.
			in.Active, in.Committed, in.SamplesUsed = 10, 180, 180*10*32
			in.Shards = shards.Stats{HandedOut: 20, Samples: 10*6400 + 10*640, Distinct: 20, TrainSamples: 60000, Epoch: 2}
		}), nil, nil},
		{"data used faster than planned", demo(func(in *api.PlanInput) {
			in.Active, in.Committed, in.Shards, in.SamplesUsed = 10, 100, fashion(10, 0), 40000
		}), []string{"data"}, []string{"at most 24000 samples left) covers about 75 of the 100 rounds left at 320 samples a round: pages run out around round 175"}},
		{"digits with T = 300 and a small class: a shard cannot hold 300 batches", api.PlanInput{
			Rounds: 300, Batch: 32, Cohort: 10, MinDevices: 2, Active: 8,
			Shards: shards.Stats{HandedOut: 8, Samples: 8 * 8000, Distinct: 8, TrainSamples: 8000, Epoch: 8}},
			[]string{"devices", "shard", "data"}, []string{"fewer than the cohort", "250 rounds of b = 32, but a page may be asked in about 300 of the 300", "covers about 250 of the 300"}},
		{"digits with T = 300 and 30 pages: each is asked in about 100 rounds", api.PlanInput{
			Rounds: 300, Batch: 32, Cohort: 10, MinDevices: 2, Active: 30,
			Shards: shards.Stats{HandedOut: 30, Samples: 30 * 8000, Distinct: 30, TrainSamples: 8000, Epoch: 30}},
			nil, nil},
		{"devices with their own data: no data warning", demo(func(in *api.PlanInput) {
			in.Active, in.SamplesUsed = 10, 1e6
		}), nil, nil},
		{"an empty lobby: Start sizes the plan, nothing to warn about", demo(func(in *api.PlanInput) {
			in.Lobby = true
		}), nil, nil},
		{"a lobby of 3 with the template's m = 10: nothing yet", demo(func(in *api.PlanInput) {
			in.Lobby, in.Active = true, 3
		}), nil, nil},
		{"one device, fewer than the cohort: words in the singular", demo(func(in *api.PlanInput) {
			in.Active, in.MinDevices = 1, 1
		}), []string{"devices"}, []string{"fewer than the cohort m = 10"}},
		{"students left with too few rows: the waiting says why", demo(func(in *api.PlanInput) {
			in.Active = 1
			in.LeftWhy = map[string]int{"too few rows for one round: this device has 5 and a round needs 32 (add 27 more)": 3,
				"its privacy budget is spent": 1}
		}), []string{"devices"}, []string{"so the session waits for more; 3 devices left: too few rows for one round: this device has 5 and a round needs 32 (add 27 more); 1 device left: its privacy budget is spent"}},
		{"four reasons: the three most said, then a count", demo(func(in *api.PlanInput) {
			in.Active = 5
			in.LeftWhy = map[string]int{"a": 1, "b": 2, "c": 3, "d": 4}
		}), []string{"devices"}, []string{"fewer than the cohort m = 10: rounds run with 5, and every device is asked in every round; 4 devices left: d; 3 devices left: c; 2 devices left: b; 1 more reason"}},
		{"finished: nothing to warn about", demo(func(in *api.PlanInput) {
			in.Committed, in.Finished = 200, true
		}), nil, nil},
	}
	for _, tc := range tests {
		got := api.PlanWarnings(tc.in)
		var kinds []string
		for _, w := range got {
			kinds = append(kinds, w.Kind)
		}
		if !slices.Equal(kinds, tc.wantKinds) {
			t.Errorf("%s: kinds %q, want %q (%v)", tc.name, kinds, tc.wantKinds, got)
			continue
		}
		if tc.in.LeftWhy != nil && len(got) > 0 && !strings.HasSuffix(got[0].Words, "connected. 3 devices left: too few rows for one round: this device has 5 and a round needs 32 (add 27 more); 1 device left: its privacy budget is spent.") &&
			!strings.HasSuffix(got[0].Words, "every round. 4 devices left: d; 3 devices left: c; 2 devices left: b; 1 more reason.") {
			t.Errorf("%s: in words %q; want why they left", tc.name, got[0].Words)
		}
		for i, sub := range tc.wantText {
			if !strings.Contains(got[i].Text, sub) {
				t.Errorf("%s: warning %d = %q, want it to contain %q", tc.name, i, got[i].Text, sub)
			}
		}
		// The projector's words: there, without the plan's symbols.
		for _, w := range got {
			if w.Words == "" || strings.ContainsAny(w.Words, "=") || strings.Contains(w.Words, " m ") ||
				strings.Contains(w.Words, "-T") || strings.Contains(w.Words, "min-devices") || strings.Contains(w.Words, "1 devices") {
				t.Errorf("%s: %s warning in words %q", tc.name, w.Kind, w.Words)
			}
		}
	}
}

// TestTaskTitle: the projector's title names the task in words.
func TestTaskTitle(t *testing.T) {
	for _, tc := range []struct{ labels, want string }{
		{"T-shirt/top,Trouser,Pullover,Dress,Coat,Sandal,Shirt,Sneaker,Bag,Ankle boot", "Learning to recognise clothing"},
		{"0,1,2,3,4,5,6,7,8,9", "Learning to recognise handwritten digits"},
		{"", "Learning to recognise pictures"},
		{"cat,dog", "Learning to tell apart cat, dog"},
		{"a,b,c,d,e,f", "Learning to tell apart a, b, c, d and 2 more"},
	} {
		if got := api.TaskTitle(wire.SessionParams{Labels: tc.labels}); got != tc.want {
			t.Errorf("TaskTitle(%q) = %q, want %q", tc.labels, got, tc.want)
		}
	}
}

// TestAnsweringIsNotConnected: slow phones that missed their last rounds
// are connected but do not answer; the projector's words say so instead
// of counting only the answering ones as connected.
func TestAnsweringIsNotConnected(t *testing.T) {
	in := api.PlanInput{Rounds: 200, Batch: 32, Cohort: 10, MinDevices: 2, Active: 1, Connected: 8}
	got := api.PlanWarnings(in)
	if len(got) == 0 || got[0].Kind != "devices" {
		t.Fatalf("warnings %+v, want a devices warning first", got)
	}
	want := "Waiting for devices to answer: a round needs at least 2, and 1 of the 8 connected is answering."
	if !strings.HasPrefix(got[0].Words, want) {
		t.Errorf("words %q, want them to start %q", got[0].Words, want)
	}
	in.Connected = 1 // nobody stuck: the words for too few connected
	if got := api.PlanWarnings(in); len(got) == 0 || !strings.HasPrefix(got[0].Words, "Waiting for more devices: a round needs at least 2, and 1 device is connected.") {
		t.Errorf("one connected, one answering: %+v", got)
	}
}

// session is api.Session under a name that does not clash with its
// Session method once embedded.
type session = api.Session

// activityOnly is a Session that answers Activity and Front only (what
// planInput reads).
type activityOnly struct {
	session // nil: any other method panics
	a       view.Activity
	f       *wsconn.Front
}

func (s activityOnly) Activity() view.Activity { return s.a }
func (s activityOnly) Front() *wsconn.Front    { return s.f }

// TestWarningsDemoDataOnlyWithDemoShards: the warning that the demo data
// handed out runs short is for a session that deals demo shards; a
// teacher's task brings none, so the host's shards (another session's)
// say nothing about it.
func TestWarningsDemoDataOnlyWithDemoShards(t *testing.T) {
	set := dataset.Set{Name: "ids", Features: 1, Classes: 10, Samples: make([]dataset.Sample, 100)}
	for i := range set.Samples {
		set.Samples[i] = dataset.Sample{X: []float32{float32(i) / 100}, Label: i % 10}
	}
	sh, err := shards.New(set, shards.Config{Classes: 10, Rounds: 3, Batch: 5, Alpha: 0.5, Seed: 1, Max: 8})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sh.New(); err != nil {
		t.Fatal(err)
	}
	for _, demo := range []bool{true, false} {
		sess := wire.SessionParams{Rounds: 3, Batch: 5, Cohort: 2, DemoShards: demo}
		s := activityOnly{a: view.Activity{Session: sess, MinDevices: 1, Active: 2, Connected: 2}, f: &wsconn.Front{Met: metrics.New()}}
		got := strings.Join(api.Warnings(s, sh), "; ")
		if warned := strings.Contains(got, "demo data handed out"); warned != demo {
			t.Errorf("demo shards %v: warnings %q; want the demo data warning %v", demo, got, demo)
		}
	}
}
