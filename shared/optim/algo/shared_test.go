package algo

import (
	"math"
	"strings"
	"testing"

	"browserfl/shared/session"
)

// TestShareScale pins the share of each shared-noise session against
// values worked out by hand from (1 + h/1000) / sqrt(h), h = t - c, with t
// = ceil(0.7 m) unless set.
func TestShareScale(t *testing.T) {
	for _, tc := range []struct {
		m, thr, coll int
		wantT, wantH int
		want         float64
	}{
		{m: 10, wantT: 7, wantH: 7, want: 1.007 / math.Sqrt(7)},
		{m: 30, wantT: 21, wantH: 21, want: 1.021 / math.Sqrt(21)},
		{m: 50, wantT: 35, wantH: 35, want: 1.035 / math.Sqrt(35)},
		{m: 50, coll: 5, wantT: 35, wantH: 30, want: 1.030 / math.Sqrt(30)},
		{m: 50, thr: 50, coll: 10, wantT: 50, wantH: 40, want: 1.040 / math.Sqrt(40)},
		{m: 3, wantT: 3, wantH: 3, want: 1.003 / math.Sqrt(3)}, // ceil(2.1) = 3
		{m: 1, wantT: 1, wantH: 1, want: 1.001},
	} {
		p := session.Params{Algorithm: "shared", M: 2 * tc.m, Cohort: tc.m, Threshold: tc.thr, Colluders: tc.coll}
		if got := p.SharedThreshold(); got != tc.wantT {
			t.Errorf("m %d t %d c %d: threshold %d, want %d", tc.m, tc.thr, tc.coll, got, tc.wantT)
		}
		if got := p.SharedHonest(); got != tc.wantH {
			t.Errorf("m %d t %d c %d: honest %d, want %d", tc.m, tc.thr, tc.coll, got, tc.wantH)
		}
		if got := ShareScale(p); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("m %d t %d c %d: share scale %v, want %v", tc.m, tc.thr, tc.coll, got, tc.want)
		}
		if got, want := FloorFactor(p), 1/(tc.want*tc.want); math.Abs(got-want) > 1e-9*want {
			t.Errorf("m %d t %d c %d: floor factor %v, want %v", tc.m, tc.thr, tc.coll, got, want)
		}
	}
	// Every other algorithm draws its own full noise.
	for _, alg := range Names() {
		if alg == "shared" {
			continue
		}
		p := session.Params{Algorithm: alg, M: 100, Cohort: 50}
		if ShareScale(p) != 1 || FloorFactor(p) != 1 || p.SharedThreshold() != 0 {
			t.Errorf("%s: share scale %v, floor factor %v, threshold %d; want 1, 1, 0", alg, ShareScale(p), FloorFactor(p), p.SharedThreshold())
		}
	}
}

func TestShareParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		alg        string
		thr, coll  int
		wantSubstr string
	}{
		{"shared", 0, 0, ""},
		{"shared", 4, 3, ""},
		{"shared", 5, 0, "threshold t = 5"},
		{"shared", -1, 0, "threshold t = -1"},
		{"shared", 0, 3, "colluders c = 3"}, // t = ceil(2.8) = 3
		{"shared", 0, -1, "colluders c = -1"},
		{"nc", 2, 0, "only \"shared\" has a threshold"},
		{"nc", 0, 1, "only \"shared\" assumes colluders"},
	} {
		p := baseParams(tc.alg)
		p.Threshold, p.Colluders = tc.thr, tc.coll
		err := Validate(p)
		switch {
		case tc.wantSubstr == "" && err != nil:
			t.Errorf("%s t %d c %d: %v", tc.alg, tc.thr, tc.coll, err)
		case tc.wantSubstr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantSubstr)):
			t.Errorf("%s t %d c %d: error %v, want one with %q", tc.alg, tc.thr, tc.coll, err, tc.wantSubstr)
		}
	}
}
