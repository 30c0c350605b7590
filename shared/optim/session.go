package optim

import "browserfl/shared/wire"

// FromSession converts a session's public parameters (the wire form every
// device receives) to Params. It is the one conversion the coordinator,
// the device runtime and the page use.
func FromSession(s wire.SessionParams) Params {
	return Params{
		Algorithm: s.Algorithm, Model: s.Model, Features: s.Features, Classes: s.Classes,
		M: s.M, Cohort: s.Cohort, Rounds: s.Rounds, Batch: s.Batch, MaxReleases: s.MaxReleases,
		Clip: s.Clip, G: s.G, L: s.L, Eta: s.Eta, Diameter: s.Diameter,
		Rho: s.RhoPaper, Epsilon: s.Epsilon, Delta: s.Delta,
		Compressor: s.Compressor, LocalSize: s.LocalSize, SnapshotProb: s.SnapshotProb, ShiftStep: s.ShiftStep,
		LocalSteps: s.LocalSteps, LocalEpochs: s.LocalEpochs,
	}
}
