package edge

import (
	"strings"
	"testing"

	"browserfl/shared/wire"
)

// An edge reads frames up to DefaultMaxFrameBytes: a session whose
// updates are larger is refused before it starts (the MLP over the
// scattering features, d = 64 x 3,969 + 64 + 640 + 10, fits in float32
// and not in float64).
func TestCheckSession(t *testing.T) {
	const mlpFeatures = 64*3969 + 64 + 640 + 10
	for _, tc := range []struct {
		dim  int
		comp string
		want string // "" = fits
	}{
		{7850, "", ""},
		{7850, "f64", ""},
		{mlpFeatures, "", ""},
		{mlpFeatures, "randk:0.5", ""},
		{mlpFeatures, "f64", "over the 1048576 bytes an edge reads"},
		{DefaultMaxFrameBytes / 4, "", "over the"},
		{7850, "nonsense", "compressor"},
	} {
		err := CheckSession(wire.SessionParams{Dim: tc.dim, Compressor: tc.comp})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("d = %d, %q: %v, want %q", tc.dim, tc.comp, err, tc.want)
		}
	}
}
