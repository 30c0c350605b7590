package secround

import (
	"testing"

	"browserfl/shared/secagg"
	"browserfl/shared/wire"
)

// TestLateAttempt: only a message of this session and of an earlier
// attempt of the current round is late (dropped); one of another
// session, of the current or a later attempt, or of another round under
// this round's frame is not, and is refused by the round.
func TestLateAttempt(t *testing.T) {
	sid := secagg.SessionID{7}
	cur := wire.SecAggRound(5, 2)
	for _, tc := range []struct {
		name  string
		sess  secagg.SessionID
		round uint64
		late  bool
	}{
		{"earlier attempt", sid, wire.SecAggRound(5, 1), true},
		{"first attempt", sid, wire.SecAggRound(5, 0), true},
		{"this attempt", sid, cur, false},
		{"later attempt", sid, wire.SecAggRound(5, 3), false},
		{"an earlier round", sid, wire.SecAggRound(4, 9), false},
		{"round 0", sid, 0, false},
		{"another session", secagg.SessionID{8}, wire.SecAggRound(5, 1), false},
	} {
		m := &secagg.AdvertiseKeys{Header: secagg.Header{Session: tc.sess, Round: tc.round}}
		if got := lateAttempt(wire.SecAggFrame{T: 5, Step: wire.StepAdvertise, Msg: m}, sid, cur); got != tc.late {
			t.Errorf("%s: late %v, want %v", tc.name, got, tc.late)
		}
	}
}
