package edge

import (
	"fmt"

	"browserfl/shared/mechanism"
	"browserfl/shared/wire"
)

// DefaultMaxFrameBytes is the largest frame an edge reads from a device
// (Config.Limits.MaxFrameBytes when unset): an edge starts before it
// knows the session's model, so its limit cannot follow the dimension as
// the single process's does.
const DefaultMaxFrameBytes = 1 << 20

// CheckSession reports whether the update frames of session s fit an
// edge's default frame limit. A session process that serves edges checks
// it at start: otherwise every update of a large model (the MLP over
// scattering features sends 2 MB frames in float64) would be refused at
// the edges, and no round could ever complete.
func CheckSession(s wire.SessionParams) error {
	spec, err := mechanism.ParseSpec(s.Compressor)
	if err != nil {
		return fmt.Errorf("edge: session compressor: %w", err)
	}
	if n := wire.UpdateFrameLen(spec.C.Size(s.Dim)); n > DefaultMaxFrameBytes {
		return fmt.Errorf("edge: an update of this session (d = %d, compressor %q) is a %d-byte frame, over the %d bytes an edge reads: use a smaller model or a compressor", s.Dim, spec.C, n, DefaultMaxFrameBytes)
	}
	if n := wire.SecAggFrameMax(s.Cohort); s.Algorithm == wire.SharedNoiseAlgorithm && n > DefaultMaxFrameBytes {
		return fmt.Errorf("edge: a secure aggregation frame of a round of %d devices may be %d bytes, over the %d bytes an edge reads: use a smaller cohort (-m)", s.Cohort, n, DefaultMaxFrameBytes)
	}
	return nil
}
