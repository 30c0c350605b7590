package plan

import (
	"browserfl/shared/optim"
	"browserfl/shared/wire"
)

// FromSession converts a session's public parameters (the wire form every
// device receives) to optim.Params. It is the one conversion the
// coordinator, the device runtime and the page use; it lives here, above
// both forms, so that shared/optim and shared/wire import nothing of each
// other. Every field of optim.Params comes from the wire field of the same
// name except Rho (wire: RhoPaper); the wire fields with no counterpart are
// listed, with why, in wireOnly (session_test.go), and a test fails when a
// field is added to one form and not to the other.
func FromSession(s wire.SessionParams) optim.Params {
	return optim.Params{
		Algorithm: s.Algorithm, Model: s.Model, Features: s.Features, Classes: s.Classes,
		M: s.M, Cohort: s.Cohort, Rounds: s.Rounds, Batch: s.Batch, MaxReleases: s.MaxReleases,
		Clip: s.Clip, G: s.G, L: s.L, Eta: s.Eta, Diameter: s.Diameter,
		Rho: s.RhoPaper, Epsilon: s.Epsilon, Delta: s.Delta,
		Compressor: s.Compressor, LocalSize: s.LocalSize, SnapshotProb: s.SnapshotProb, ShiftStep: s.ShiftStep,
		LocalSteps: s.LocalSteps, LocalEpochs: s.LocalEpochs,
	}
}
