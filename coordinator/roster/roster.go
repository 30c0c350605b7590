package roster

import (
	"slices"
	"strings"
	"time"

	"browserfl/coordinator/wsconn"
	"browserfl/engine"
	"browserfl/engine/check"
	"browserfl/shared/wire"
)

// Link is a device's connection as the round logic sees it: a websocket
// this process holds (*wsconn.Conn), or one an edge process holds for it
// (a session node's remote link, coordinator/sessionnode). Every method is
// safe to call under the coordinator's lock: none blocks on the device.
type Link interface {
	DeviceID() string
	SetDeviceID(id string)
	// Send queues a frame (round frames are binary); it reports false if
	// the connection is closing or cannot keep up.
	Send(f wsconn.OutFrame) bool
	// SendRound queues round f.round's frame (f.data, or f.short where the
	// device holds x_{t-1}) and returns the bytes queued, 0 if it could not.
	SendRound(f wsconn.OutFrame) int
	// SendControl queues a control message.
	SendControl(m wire.Message) bool
	// CloseWith sends an error message and closes the connection.
	CloseWith(code, reason string)
}

// Control sends m on l if the device has a connection.
func Control(l Link, m wire.Message) {
	if l != nil {
		l.SendControl(m)
	}
}

// Device is one device's record in this process.
type Device struct {
	ID       string
	Nickname string    // Hello.Nickname of the latest hello (validated, NFKC: gate.NormalizeNickname)
	Skeleton string    // gate.NicknameSkeleton(Nickname), for the look-alike check
	Joined   time.Time // first hello in this process (the dashboard's order)
	Conn     Link      // nil while disconnected (set by Attach, cleared by Detach)
	Round    int       // round the device is assigned in and not yet decided; 0 when idle
	// Participations counts the rounds this device was included in
	// since this record was made (its history's mark, bus.Mark); the
	// session's count is Roster.Included.
	Participations int
	// Gen is drawn at random when this process creates the device's
	// record: an edge's history of the device (coordinator/edge/edgehist.go) is valid
	// only while the record it counted against lives.
	Gen uint64
	// Left is set by a Leave message: the device is not sampled until
	// its next hello.
	Left bool
	// Standing counts the consecutive assigned rounds the device did not
	// answer (at Limits.MaxMisses it is no longer sampled, only asked now
	// and then as a probe: cohort.go), whether an update of it was
	// accepted since this process knew it (a device is a sure cohort
	// member only once proven) and its refused updates. Only an accepted
	// update resets the misses: a reconnection or a new hello does not.
	Standing engine.Standing
	// LeftWhy is the Leave's detail (for example why the final
	// parameters were refused).
	LeftWhy string
	// Hist is the running sum of the device's included updates and the
	// rounds it was asked, for the Checker's history tests (updates that
	// arrive directly; an edge keeps its own devices'). It is from the
	// start for a device registered by this process: every ask and every
	// inclusion of it is then seen here.
	Hist check.History
	// RejectWhy says, in plain words, why the device's last refused
	// update was refused (Standing counts them): the teacher's view of
	// the dashboard shows both.
	RejectWhy string
	// SignKey is the long-term ed25519 public key of the device's latest
	// hello (wire.Hello.SignKey), HasKey whether it gave one: its secure
	// aggregation messages in a shared-noise session are signed with it.
	SignKey [32]byte
	HasKey  bool
	// Removed: the teacher removed the device. It is never sampled
	// again; its connection is closed once any update of it that the
	// open round already holds is decided.
	Removed bool
}

// Roster is the table of a session's devices in this process. It is not
// safe for concurrent use: the coordinator calls it under its lock.
type Roster struct {
	maxMisses int  // a device that missed this many rounds in a row is no longer sampled
	trustNew  bool // Config.TrustNewDevices: a device is sure from its first hello
	devices   map[string]*Device
	// order holds the same devices sorted by id (the cohort rule samples
	// from the sorted eligible ids): kept in step with devices by Add
	// and Evict, so that a round scans it instead of sorting every id.
	order []*Device
	nconn int // devices with a connection
	// histLost holds the devices whose record this process evicted: on
	// their return their history is not from the start.
	histLost map[string]bool
	// included counts, for every device id, the committed rounds of the
	// session that included it: from the store when this process
	// started (SetIncluded), then one more at each inclusion. It
	// outlives a device's record, and the process: the dashboard's
	// per-person figure.
	included map[string]int
}

// SetIncluded sets the committed rounds that included each device before
// this process started (store.IncludedCounts).
func (r *Roster) SetIncluded(counts map[string]int) { r.included = counts }

// Included returns the committed rounds that included device id.
func (r *Roster) Included(id string) int { return r.included[id] }

// CountIncluded counts one more committed round that included device id
// (every id of the round's record, as store.IncludedCounts counts them).
func (r *Roster) CountIncluded(id string) {
	if r.included == nil {
		r.included = map[string]int{}
	}
	r.included[id]++
}

// New returns an empty roster: a device that missed maxMisses rounds in
// a row is no longer sampled; with trustNew every device is sure from
// its first hello.
func New(maxMisses int, trustNew bool) *Roster {
	return &Roster{maxMisses: maxMisses, trustNew: trustNew, devices: make(map[string]*Device)}
}

// Get returns device id's record, nil if there is none.
func (r *Roster) Get(id string) *Device { return r.devices[id] }

// Len is the number of devices with a record.
func (r *Roster) Len() int { return len(r.devices) }

// Connected is the number of devices with a connection.
func (r *Roster) Connected() int { return r.nconn }

// Devices returns the records sorted by id; the caller must not change
// the slice.
func (r *Roster) Devices() []*Device { return r.order }

// Add adds a new device to the table and to the sorted order.
func (r *Roster) Add(d *Device) {
	r.devices[d.ID] = d
	i, _ := slices.BinarySearchFunc(r.order, d.ID, func(e *Device, id string) int { return strings.Compare(e.ID, id) })
	r.order = slices.Insert(r.order, i, d)
}

// drop removes device id from the table and the order.
func (r *Roster) drop(id string) {
	delete(r.devices, id)
	if i, ok := slices.BinarySearchFunc(r.order, id, func(e *Device, id string) int { return strings.Compare(e.ID, id) }); ok {
		r.order = slices.Delete(r.order, i, i+1)
	}
}

// Attach binds d to l and returns the link it had (nil if none).
func (r *Roster) Attach(d *Device, l Link) (old Link) {
	old = d.Conn
	if old == nil {
		r.nconn++
	}
	d.Conn = l
	return old
}

// Detach records that d's connection is gone.
func (r *Roster) Detach(d *Device) {
	if d.Conn != nil {
		d.Conn = nil
		r.nconn--
	}
}

// HistLost reports whether this process evicted device id's record: its
// asks and inclusions before that are forgotten.
func (r *Roster) HistLost(id string) bool { return r.histLost[id] }

// EvictInactive forgets up to want of the devices in ids (the longest
// inactive first) that have no connection, keeping a device assigned to
// an undecided round. It returns the ids to drop from the gate's table
// (those evicted and stale entries: unknown or connected) and how many
// records it evicted.
func (r *Roster) EvictInactive(ids []string, want int) (gone []string, evicted int) {
	for _, id := range ids {
		if len(gone) >= want {
			break
		}
		d := r.devices[id]
		switch {
		case d == nil || d.Conn != nil:
			gone = append(gone, id) // stale entry: drop it from the table
			continue
		case d.Round != 0:
			continue
		}
		r.drop(id)
		if r.histLost == nil {
			r.histLost = map[string]bool{}
		}
		r.histLost[id] = true // its asks and inclusions so far are forgotten
		gone = append(gone, id)
		evicted++
	}
	return gone, evicted
}
