package coordinator

import (
	"fmt"

	"browserfl/coordinator/gate"
	"browserfl/coordinator/metrics"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/wire"
)

// errNicknameTaken is the refusal of a nickname too close to a present
// one; its reason is what the student reads.
var errNicknameTaken = &wsconn.CloseError{Code: wire.CodeNickname, Kind: metrics.RejNickname,
	Reason: "That name is too close to someone else's. Try another."}

// checkNicknameLocked refuses nickname for device id if it looks like the
// nickname of another device present in the session (connected, not
// left). The caller holds c.mu.
func (c *Coordinator) checkNicknameLocked(id, nickname string) error {
	if nickname == "" {
		return nil
	}
	sk := gate.NicknameSkeleton(nickname)
	for _, d := range c.devices { // a string compare per device (about 5 ns)
		if d.id != id && d.conn != nil && !d.left && d.skeleton != "" && d.skeleton == sk {
			return errNicknameTaken
		}
	}
	return nil
}

// nicknameError is the refusal of a nickname that NFKC made invalid.
func nicknameError(err error) error {
	return &wsconn.CloseError{Code: wire.CodeNickname, Kind: metrics.RejNickname, Reason: fmt.Sprintf("That name cannot be used: %v. Try another.", err)}
}
