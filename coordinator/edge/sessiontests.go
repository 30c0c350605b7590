package edge

import (
	"log/slog"
	"reflect"
	"sync/atomic"

	"browserfl/shared/optim/plausible"
	"browserfl/shared/wire"
)

// sessionTests are the tests of the session parameters last received
// with a round (plausible.Checker), built once per parameters. They are
// guarded by the edge's mutex.
type sessionTests struct {
	chk    *plausible.Checker
	chkFor wire.SessionParams
	log    *slog.Logger
	errors *atomic.Int64 // the bus's error count (parameters that make no checker)
}

// of returns the tests of the session parameters sp (nil when the session
// sent none or they do not make a checker: the norm bound alone then, and
// the bus error is counted).
func (st *sessionTests) of(sp *wire.SessionParams) *plausible.Checker {
	if sp == nil {
		return nil
	}
	if st.chk != nil && reflect.DeepEqual(st.chkFor, *sp) {
		return st.chk
	}
	chk, err := plausible.NewChecker(*sp, sp.Dim)
	if err != nil {
		st.errors.Add(1)
		st.log.Warn("the session's parameters make no update tests; the norm bound alone applies", "err", err)
		st.chk = nil
		return nil
	}
	st.chk, st.chkFor = chk, *sp
	st.log.Info("update validation", "max_norm", chk.NormBound(), "tests", chk.Describe())
	return chk
}
