package wsconn

import (
	"fmt"

	"browserfl/coordinator/gate"
	"browserfl/coordinator/metrics"
	"browserfl/shared/wire"
)

// GateHello applies the gate to a hello before admit (Handler.CheckHello)
// for a session whose join code is code: the version (a wrong one is a bad
// frame), the join code with its per-address backoff and the registration
// rate for a hello without a device id.
func (c *Front) GateHello(cn *Conn, h wire.Hello, code string) error {
	if h.Version != wire.Version {
		return &CloseError{Code: wire.CodeVersion, Reason: fmt.Sprintf("protocol version %d, want %d", h.Version, wire.Version)}
	}
	switch v, retry := c.Gate.CheckCode(cn.Addr, h.JoinCode, code); v {
	case gate.Throttled:
		return &CloseError{Code: wire.CodeRate, Kind: metrics.RejJoinThrottled, Quiet: true,
			Reason: fmt.Sprintf("too many wrong join codes from this address; retry in %d s", int(retry.Seconds()+1))}
	case gate.Wrong:
		c.Met.AuthFailures.Add(1)
		return &CloseError{Code: wire.CodeJoinCode, Kind: metrics.RejJoinCode, Quiet: true, Reason: "wrong join code"}
	}
	if h.DeviceID == "" && !c.Gate.Register(cn.Addr) {
		return &CloseError{Code: wire.CodeRate, Kind: metrics.RejRegisterThrottled, Quiet: true,
			Reason: "too many new devices; retry later"}
	}
	return nil
}
