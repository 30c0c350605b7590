package roster

import (
	"fmt"
	"slices"
	"strings"

	"browserfl/coordinator/gate"
	"browserfl/coordinator/metrics"
	"browserfl/coordinator/view"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/wire"
)

// ErrNicknameTaken is the refusal of a nickname too close to a present
// one; its reason is what the student reads.
var ErrNicknameTaken = &wsconn.CloseError{Code: wire.CodeNickname, Kind: metrics.RejNickname,
	Reason: "That name is too close to someone else's. Try another."}

// NicknameError is the refusal of a nickname that NFKC made invalid.
func NicknameError(err error) error {
	return &wsconn.CloseError{Code: wire.CodeNickname, Kind: metrics.RejNickname, Reason: fmt.Sprintf("That name cannot be used: %v. Try another.", err)}
}

// CheckNickname refuses nickname for device id if it looks like the
// nickname of another device present in the session (connected, not
// left).
func (r *Roster) CheckNickname(id, nickname string) error {
	if nickname == "" {
		return nil
	}
	sk := gate.NicknameSkeleton(nickname)
	for _, d := range r.devices { // a string compare per device (about 5 ns)
		if d.ID != id && d.Conn != nil && !d.Left && d.Skeleton != "" && d.Skeleton == sk {
			return ErrNicknameTaken
		}
	}
	return nil
}

// SetNickname records d's nickname (normalised; "" for none) and its
// skeleton for the look-alike check.
func (d *Device) SetNickname(nickname string) {
	d.Nickname, d.Skeleton = nickname, ""
	if nickname != "" {
		d.Skeleton = gate.NicknameSkeleton(nickname)
	}
}

// People lists the devices in the order they first joined (lobby: the
// session waits in its lobby).
func (r *Roster) People(lobby bool) []view.Person {
	ds := make([]*Device, 0, len(r.devices))
	for _, d := range r.devices {
		ds = append(ds, d)
	}
	slices.SortFunc(ds, func(a, b *Device) int {
		if c := a.Joined.Compare(b.Joined); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	out := make([]view.Person, 0, len(ds))
	for _, d := range ds {
		p := view.Person{Nickname: d.Nickname, Rounds: r.Included(d.ID)}
		p.SetTeacherView(d.ID, d.Standing.Rejected(), d.RejectWhy)
		switch {
		case d.Removed:
			p.State, p.Why = "removed", "removed by the teacher"
		case d.Left:
			p.State, p.Why = "left", d.LeftWhy
		case d.Conn == nil:
			p.State = "gone"
		case r.Stuck(d):
			p.State = "stuck"
		case lobby:
			p.State = "lobby"
		default:
			p.State = "active"
		}
		out = append(out, p)
	}
	return out
}

// Tally fills s.Devices (the dashboard's counts of devices) and returns
// the most rounds any device was included in.
func (r *Roster) Tally(s *view.Status) (mostRounds int) {
	for _, d := range r.devices {
		if d.Conn != nil {
			s.Devices.Connected++
			switch {
			case r.Eligible(d):
				s.Devices.Eligible++
			case d.Left:
				s.Devices.Left++
			case r.Stuck(d):
				s.Devices.Stuck++
			}
		}
		if d.Round != 0 {
			s.Devices.Busy++
		}
		mostRounds = max(mostRounds, r.Included(d.ID))
	}
	s.Devices.Known = len(r.devices)
	return mostRounds
}

// TallyActivity fills a's device counts: Connected, Active and LeftWhy.
func (r *Roster) TallyActivity(a *view.Activity) {
	for _, d := range r.devices {
		if d.Conn != nil && !d.Left && !d.Removed {
			a.Connected++
			if !r.Stuck(d) {
				a.Active++
			}
		}
		if d.Left && d.LeftWhy != "" && !d.Removed {
			if a.LeftWhy == nil {
				a.LeftWhy = map[string]int{}
			}
			a.LeftWhy[d.LeftWhy]++
		}
	}
}
