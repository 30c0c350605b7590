package edge

import (
	"strings"
	"testing"

	"browserfl/shared/wire"
)

// An edge reads frames up to DefaultMaxFrameBytes: a session whose
// updates are larger is refused before it starts (the MLP over the
// scattering features, d = 64 x 3,969 + 64 + 640 + 10, fits in float32
// and not in float64), and so is a shared-noise session whose cohort's
// secure aggregation frames are (4,092 devices fit, 4,093 do not).
func TestCheckSession(t *testing.T) {
	const mlpFeatures = 64*3969 + 64 + 640 + 10
	for _, tc := range []struct {
		dim    int
		comp   string
		cohort int    // with shared noise; 0: nc
		want   string // "" = fits
	}{
		{7850, "", 0, ""},
		{7850, "f64", 0, ""},
		{mlpFeatures, "", 0, ""},
		{mlpFeatures, "randk:0.5", 0, ""},
		{mlpFeatures, "f64", 0, "over the 1048576 bytes an edge reads"},
		{DefaultMaxFrameBytes / 4, "", 0, "over the"},
		{7850, "nonsense", 0, "compressor"},
		{7850, "", 4092, ""},
		{7850, "", 4093, "secure aggregation frame of a round of 4093 devices"},
	} {
		s := wire.SessionParams{Dim: tc.dim, Compressor: tc.comp}
		if tc.cohort > 0 {
			s.Algorithm, s.Cohort = wire.SharedNoiseAlgorithm, tc.cohort
		}
		err := CheckSession(s)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("d = %d, %q: %v, want %q", tc.dim, tc.comp, err, tc.want)
		}
	}
}
