package edge

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"browserfl/coordinator/bus"
	"browserfl/coordinator/gate"
	"browserfl/coordinator/metrics"
	"browserfl/coordinator/site"
	"browserfl/coordinator/wsconn"
	"browserfl/engine/check"
	"browserfl/shared/mechanism"
	"browserfl/shared/optim/plausible"
	"browserfl/shared/wire"
)

// Config configures an edge process of the cluster shape
// (docs/cluster.md).
type Config struct {
	// ID names the edge (required; letters, digits, '-', '_'): its NATS
	// subjects are <Prefix>.up.<ID> and <Prefix>.down.<ID>. Two live
	// edges must not share an id.
	ID string
	// Conn is the NATS connection (required; unlimited reconnects).
	Conn *nats.Conn
	// Status is the connection's status (ConnectNATS's Status): /healthz
	// says why the edge is not connected (its credentials refused, say).
	Status *bus.NATSStatus
	// Prefix is the subjects' first token (default "browserfl"), the
	// session process's.
	Prefix string
	// Limits bound what a connection may do (defaults in Limits;
	// MaxFrameBytes defaults to 1 MiB, as the edge does not know the
	// model's dimension before the session tells it).
	Limits wsconn.Limits
	// Gate throttles join codes and registrations per client address
	// (gate.go); the registration rate over all addresses applies per
	// edge.
	Gate gate.Config
	// AllowedOrigins are the websocket Origin host patterns accepted
	// besides the request's own host.
	AllowedOrigins []string
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger
	// BeatInterval is how often the edge tells the session it is alive
	// (default 1s); SessionTimeout is how long without a word from the
	// session before the edge refuses new devices and reports itself
	// unhealthy (default 5s). Devices already connected stay.
	BeatInterval, SessionTimeout time.Duration
}

// Edge holds device websockets for a session run by a session process
// elsewhere (sessionnode.Node): it applies the gate and the limits, forwards
// hellos, status queries and leaves, validates each update (decoded once,
// finite, within the session's norm bound) and sends the session one sum
// per round instead of every update.
type Edge struct {
	front *wsconn.Front
	cfg   Config
	nc    *nats.Conn
	link  sessionLink // publishes to the session, counts the bus's traffic

	mu        sync.Mutex
	seq       uint64
	conns     map[uint64]*edgeConn
	epoch     uint64 // the session process's, as last heard
	beat      bus.SessionBeat
	lastBeat  time.Time
	round     *edgeRound
	tests     sessionTests // of the session parameters last received with a round
	lastRound int          // the newest round number assigned on this edge
	rosters   int          // rosters sent (each is numbered)
	vecs      *wsconn.FreeList[*[]float64]
	// hists are the histories of the devices this edge has asked
	// (edgehist.go).
	hists histories

	// counters (/metrics)
	hellos      atomic.Int64
	aggregates  atomic.Int64
	aggMembers  atomic.Int64
	epochChange atomic.Int64
	secAggUp    atomic.Int64 // secure aggregation frames relayed to the session
	secAggDown  atomic.Int64 // and to devices
}

// edgeConn is one device connection the edge holds.
type edgeConn struct {
	cn       *wsconn.Conn
	nickname string
	signKey  string     // the hello's (wire.Hello.SignKey), for the roster
	welcome  chan error // set until the session answered the hello
	// secret is the secret the edge issued a new device (only its digest
	// went to the session); the edge adds it to the welcome.
	secret string
	// secretHash is the digest of the device's secret (its roster entry
	// proves with it that the device connected here).
	secretHash string
	// assigned is the round assigned to the device and not yet decided
	// (0 if none); asked is when the edge last asked the session about it.
	assigned int
	asked    time.Time
	ended    bool // End was forwarded to the device
	// endHeld: End came while the device waited for a decision; it is
	// sent after the decision (endAt: its committed round).
	endHeld bool
	endAt   int
	// hist is the device's history for the round it was asked (nil: none
	// known, per-message tests only); pending is its accepted update of
	// round pendingT, kept until the session decides it (then added to
	// hist if included).
	hist     *edgeHist
	pending  *[]float64
	pendingT int
}

// New checks cfg and returns an edge ready to Run and to serve HTTP.
func New(cfg Config) (*Edge, error) {
	if err := bus.CheckEdgeID(cfg.ID); err != nil {
		return nil, fmt.Errorf("edge: %w", err)
	}
	if cfg.Conn == nil {
		return nil, errors.New("edge: Config.Conn is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "browserfl"
	}
	if err := bus.CheckEdgeID(cfg.Prefix); err != nil {
		return nil, fmt.Errorf("edge: subject prefix: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.BeatInterval <= 0 {
		cfg.BeatInterval = time.Second
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 5 * time.Second
	}
	if cfg.Limits.MaxFrameBytes <= 0 {
		cfg.Limits.MaxFrameBytes = DefaultMaxFrameBytes
	}
	var b [16]byte
	if _, err := crand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("edge: instance: %w", err)
	}
	lim := cfg.Limits.WithDefaults(0)
	vecs := wsconn.NewVecList(0)
	e := &Edge{
		front: &wsconn.Front{Lim: lim, Met: metrics.New(), Log: cfg.Logger.With("edge", cfg.ID), Origins: cfg.AllowedOrigins,
			Gate: gate.New(cfg.Gate, 20*time.Second, cfg.Logger), Bufs: wsconn.NewReadBuffers()},
		vecs: vecs,
		cfg:  cfg, nc: cfg.Conn,
		conns: map[uint64]*edgeConn{}, hists: newHistories(vecs),
		// Connection numbers start at random: a restarted edge never
		// reuses a number the session may still hold for its
		// predecessor (the session keys devices by edge and number).
		seq: binary.LittleEndian.Uint64(b[8:]) >> 16,
	}
	e.link.nc, e.link.subject, e.link.log = cfg.Conn, cfg.Prefix+".up."+cfg.ID, e.front.Log
	e.link.instance = binary.LittleEndian.Uint64(b[:]) | 1
	e.tests.log, e.tests.errors = e.front.Log, &e.link.errors
	e.front.H = edgeHandler{e}
	return e, nil
}

// Run receives the session's envelopes and beats until ctx is done;
// then every device connection is closed with CodeShutdown.
func (e *Edge) Run(ctx context.Context) error {
	sub, err := e.nc.Subscribe(e.cfg.Prefix+".down."+e.cfg.ID, func(m *nats.Msg) {
		e.link.inBytes.Add(int64(len(m.Data)))
		e.handleDown(m.Data)
	})
	if err != nil {
		return fmt.Errorf("edge %s: subscribe: %w", e.cfg.ID, err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	defer sub.Unsubscribe()
	if e.nc.IsConnected() {
		e.front.Log.Info("edge ready", "prefix", e.cfg.Prefix, "instance", e.link.instance)
	} else {
		e.front.Log.Warn("edge started, not connected to NATS yet: it admits no device until it is", "prefix", e.cfg.Prefix,
			"instance", e.link.instance, "err", e.cfg.Status.Err())
	}
	tick := time.NewTicker(e.cfg.BeatInterval)
	defer tick.Stop()
	e.sendBeat()
	for {
		select {
		case <-ctx.Done():
			e.shutdown()
			return ctx.Err()
		case <-tick.C:
			e.sendBeat()
		}
	}
}

func (e *Edge) shutdown() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ec := range e.conns {
		ec.cn.CloseWith(wire.CodeShutdown, "this server is shutting down; reconnect")
	}
}

// sendBeat tells the session the edge is alive and asks about devices
// whose round the session has committed but whose decision did not come
// (a message lost while NATS restarted, say).
func (e *Edge) sendBeat() {
	e.mu.Lock()
	n := 0
	for _, ec := range e.conns {
		if ec.welcome == nil && ec.cn.ID != "" {
			n++
		}
	}
	type ask struct {
		seq uint64
		id  string
		t   int
	}
	var asks []ask
	now := time.Now()
	if !e.lastBeat.IsZero() {
		for seq, ec := range e.conns {
			t := ec.assigned
			if t == 0 || t > e.beat.Committed || t == e.beat.Open || ec.cn.ID == "" {
				continue
			}
			if r := e.round; r != nil && r.t == t && !r.flushed {
				continue
			}
			if now.Sub(ec.asked) < 2*e.cfg.BeatInterval {
				continue
			}
			ec.asked = now
			asks = append(asks, ask{seq, ec.cn.ID, t})
		}
	}
	e.mu.Unlock()
	e.link.publish(bus.KindEdgeBeat, &bus.Header{Devices: n, MsgRate: e.front.Lim.MsgRate}, nil)
	for _, a := range asks {
		e.link.publish(bus.KindStatus, &bus.Header{Seq: a.seq, ID: a.id, T: a.t}, nil)
	}
}

// sessionAlive reports whether the session was heard from within
// SessionTimeout (call with e.mu held).
func (e *Edge) sessionAliveLocked() bool {
	return !e.lastBeat.IsZero() && time.Since(e.lastBeat) <= e.cfg.SessionTimeout
}

// Healthy reports whether the edge can admit devices: the session was
// heard from recently and NATS is connected.
func (e *Edge) Healthy() error {
	if !e.nc.IsConnected() {
		if err := e.cfg.Status.Err(); err != nil {
			return fmt.Errorf("not connected to NATS: %w", err)
		}
		return errors.New("not connected to NATS")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.sessionAliveLocked() {
		if err := e.cfg.Status.Denied(); err != nil {
			return fmt.Errorf("no word from the session process; the NATS server refused this edge an operation: %w", err)
		}
		return errors.New("no word from the session process")
	}
	return nil
}

// handleDown acts on one envelope from the session, in order.
func (e *Edge) handleDown(b []byte) {
	kind, h, body, err := bus.Decode(b)
	if err != nil {
		e.link.errors.Add(1)
		e.front.Log.Warn("bad envelope from the session", "err", err)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if h.Epoch != 0 && h.Epoch != e.epoch {
		if e.epoch != 0 {
			// Another session process: the round being collected is
			// gone (its devices learn "excluded" from the new one, which
			// asks for the roster).
			e.epochChange.Add(1)
			e.front.Log.Info("the session process changed", "round_dropped", e.round != nil && !e.round.flushed)
		}
		e.dropRoundLocked()
		e.epoch = h.Epoch
	}
	switch kind {
	case bus.KindControl:
		e.controlLocked(h.Seq, body)
	case bus.KindClose:
		ec := e.conns[h.Seq]
		if ec == nil {
			return
		}
		ce := &wsconn.CloseError{Code: h.Code, Reason: h.Reason}
		if ec.welcome != nil {
			ec.welcome <- ce
			ec.welcome = nil
			return
		}
		ec.cn.CloseWith(h.Code, h.Reason)
	case bus.KindRound:
		e.roundLocked(h, body)
	case bus.KindSecAggDown:
		e.relaySecAggLocked(h, body)
	case bus.KindSessionBeat:
		if h.Beat == nil {
			e.link.errors.Add(1)
			return
		}
		e.beat, e.lastBeat = *h.Beat, time.Now()
		if h.Beat.Resync {
			e.rosterLocked()
		}
		if h.Beat.Finished {
			// End may have been lost on the way (or the device joined
			// after it): every device hears it once from the edge.
			for seq, ec := range e.conns {
				e.endLocked(seq, ec, h.Beat.Committed)
			}
		}
	default:
		e.link.errors.Add(1)
	}
}

// controlLocked forwards a control message to a device: the welcome
// completes its hello; a decision clears its assigned round.
func (e *Edge) controlLocked(seq uint64, body []byte) {
	m, err := wire.DecodeControl(body)
	if err != nil {
		e.link.errors.Add(1)
		return
	}
	ec := e.conns[seq]
	if ec == nil {
		if w, ok := m.(wire.Welcome); ok {
			// The session admitted a connection the edge gave up on.
			e.link.publish(bus.KindDisconnect, &bus.Header{Seq: seq, ID: w.DeviceID}, nil)
		}
		return
	}
	switch m := m.(type) {
	case wire.End:
		e.endLocked(seq, ec, m.Committed)
		return
	case wire.Welcome:
		if ec.welcome == nil {
			return // a second welcome: ignore
		}
		ec.cn.SetDeviceID(m.DeviceID)
		if ec.secret != "" {
			// A new device, registered here: its history is from its
			// start.
			e.hists.start(m.DeviceID)
			// A new device: its secret is the one the edge issued.
			m.Secret, ec.secret = ec.secret, ""
			if body, err = wire.EncodeControl(m); err != nil {
				e.link.errors.Add(1)
				return
			}
		}
		ec.cn.Send(wsconn.OutFrame{Data: body})
		ec.welcome <- nil
		ec.welcome = nil
		return
	case wire.Decision:
		if m.T == ec.assigned && m.State != wire.Pending {
			ec.assigned = 0
			e.hists.decided(ec, m.T, m.State == wire.Included)
			if ec.welcome == nil {
				ec.cn.Send(wsconn.OutFrame{Data: body})
			}
			if ec.endHeld {
				e.endLocked(seq, ec, ec.endAt)
			}
			return
		}
	}
	if ec.welcome == nil {
		ec.cn.Send(wsconn.OutFrame{Data: body})
	}
}

// endLocked sends End to a device once. A device still waiting for the
// decision of a round gets that first: its decision may have been lost
// on the way (a NATS restart), and a device that ends with an undecided
// update keeps its noise state pending. The edge asks the session, and
// sends End after the answer.
func (e *Edge) endLocked(seq uint64, ec *edgeConn, committed int) {
	if ec.ended || ec.welcome != nil {
		return
	}
	if ec.assigned != 0 {
		if !ec.endHeld {
			ec.endHeld, ec.endAt, ec.asked = true, committed, time.Now()
			e.link.publish(bus.KindStatus, &bus.Header{Seq: seq, ID: ec.cn.ID, T: ec.assigned}, nil)
		}
		return
	}
	ec.ended, ec.endHeld = true, false
	ec.cn.SendControl(wire.End{Committed: committed})
}

// rosterLocked sends the session every admitted device, in chunks that
// carry the roster's number, their index and their count (one, empty,
// if the edge holds no device), so that the session acts only on a
// whole roster.
func (e *Edge) rosterLocked() {
	var entries []bus.RosterEntry
	now := time.Now()
	for seq, ec := range e.conns {
		if ec.welcome != nil || ec.cn.ID == "" {
			continue
		}
		entries = append(entries, bus.RosterEntry{Seq: seq, ID: ec.cn.ID, Nickname: ec.nickname, Pending: ec.assigned,
			SecretHash: ec.secretHash, SignKey: ec.signKey})
		ec.asked = now // the roster asks about the pending round
	}
	e.rosters++
	chunks := max(1, (len(entries)+bus.RosterChunk-1)/bus.RosterChunk)
	for i := range chunks {
		part := entries[min(i*bus.RosterChunk, len(entries)):min((i+1)*bus.RosterChunk, len(entries))]
		e.link.publish(bus.KindRoster, &bus.Header{T: e.rosters, Roster: part, Chunk: i, Chunks: chunks}, nil)
	}
}

// dropRoundLocked forgets the round being collected without sending it.
func (e *Edge) dropRoundLocked() {
	if r := e.round; r != nil && !r.flushed {
		r.stop()
	}
	e.round = nil
}

// roundLocked starts round h.T for the members h.Seqs: each gets the
// frame, and the edge sends the session their sum when all answered or
// shortly before the deadline.
func (e *Edge) roundLocked(h bus.Header, frame []byte) {
	if h.T <= 0 || h.Dim <= 0 || h.Dim > 1<<26 {
		e.link.errors.Add(1)
		return
	}
	// A shared-noise round discarded below its threshold runs again under
	// its number (secagg.go): otherwise one round message per edge and
	// round.
	shared := h.Session != nil && h.Session.Algorithm == wire.SharedNoiseAlgorithm
	if r := e.round; r != nil && r.t == h.T && r.epoch == h.Epoch && !shared {
		e.link.errors.Add(1)
		return
	}
	e.dropRoundLocked()
	bound := h.Bound
	if bound == 0 {
		bound = math.Inf(1)
	}
	r := &edgeRound{epoch: h.Epoch, t: h.T, members: make(map[uint64]bool, len(h.Seqs)), dim: h.Dim, bound: bound, shared: shared}
	if !shared {
		r.chk = e.tests.of(h.Session)
	}
	short := wire.ShortRound(frame) // for devices that hold x_{t-1} (conn.sendRound)
	for k, seq := range h.Seqs {
		ec := e.conns[seq]
		_, dup := r.members[seq] // listed twice: asked and waited for once
		if ec == nil || ec.welcome != nil || dup || ec.cn.SendRound(wsconn.OutFrame{Binary: true, Data: frame, Short: short, Round: h.T}) == 0 {
			continue // gone: the session hears of it from its disconnect
		}
		r.members[seq] = false
		r.waiting++
		ec.assigned, ec.asked = h.T, time.Now()
		ec.hist = nil
		if len(h.Marks) == len(h.Seqs) && !shared {
			ec.hist = e.hists.ask(ec, h.Marks[k])
		}
	}
	e.round, e.lastRound = r, max(e.lastRound, h.T)
	if r.waiting == 0 || shared {
		// Nothing to collect here: a shared-noise round's frames go to
		// the session as they come.
		r.flushed = true
		return
	}
	// The sum must reach the session before its deadline: the edge
	// closes its collection a tenth earlier (50 ms to 2 s), counted
	// from when the round reached it.
	deadline := time.Duration(h.DeadlineMillis) * time.Millisecond
	margin := min(max(deadline/10, 50*time.Millisecond), 2*time.Second)
	r.timer = time.AfterFunc(max(deadline-margin, 0), func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.flushLocked(r)
	})
}

// flushLocked sends round r's sum (once): the members that answered, and
// those that did not (the session excludes them at once).
func (e *Edge) flushLocked(r *edgeRound) {
	if r.flushed || e.round != r {
		return
	}
	r.stop()
	h := &bus.Header{Epoch: r.epoch, T: r.t}
	for seq, answered := range r.members {
		if ec := e.conns[seq]; !answered && ec != nil {
			h.Missing = append(h.Missing, ec.cn.ID)
			h.MissingSeqs = append(h.MissingSeqs, seq)
		}
	}
	e.sendSumLocked(r, h)
}

// sendSumLocked sends the members summed so far (h carries the rest of
// the header) and starts a new sum: the session takes several sums of
// one round from an edge, each whole.
func (e *Edge) sendSumLocked(r *edgeRound, h *bus.Header) {
	body := r.takeSum(h)
	e.link.publish(bus.KindAggregate, h, body)
	e.aggregates.Add(1)
	e.aggMembers.Add(int64(len(h.IDs)))
}

// checkHello implements handler: the gate, with the join code the
// session announced.
func (e *Edge) checkHello(cn *wsconn.Conn, h wire.Hello) error {
	e.mu.Lock()
	code, alive := e.beat.JoinCodeHash, e.sessionAliveLocked()
	e.mu.Unlock()
	if !alive || code == "" {
		return &wsconn.CloseError{Code: wire.CodeShutdown, Reason: "the session is not reachable; retry in a moment"}
	}
	// The session sends the join code's digest only: compare digests.
	h.JoinCode = bus.CodeDigest(h.JoinCode)
	return e.front.GateHello(cn, h, code)
}

// admit implements handler: the hello goes to the session, which
// authenticates it and answers with the welcome (or why not). The join
// code and the secret cross the bus as digests only: a reader of the
// bus learns nothing it could say hello with. A new device's secret is
// issued here (the session registers its digest).
func (e *Edge) admit(cn *wsconn.Conn, h wire.Hello) error {
	hdr := &bus.Header{Addr: cn.Addr, CodeHash: bus.CodeDigest(h.JoinCode), SecretHash: bus.Digest(h.Secret)}
	var issued string
	if h.DeviceID == "" {
		_, secret, err := gate.NewCredentials()
		if err != nil {
			return err
		}
		issued, hdr.SecretHash = secret, bus.Digest(secret)
	}
	h.JoinCode, h.Secret = "", ""
	body, err := wire.EncodeControl(h)
	if err != nil {
		return wsconn.BadFrame(err)
	}
	e.mu.Lock()
	e.seq++
	seq := e.seq
	cn.Seq = seq
	hdr.Seq = seq
	ch := make(chan error, 1)
	e.conns[seq] = &edgeConn{cn: cn, nickname: h.Nickname, signKey: h.SignKey, welcome: ch, secret: issued, secretHash: hdr.SecretHash}
	e.link.publish(bus.KindHello, hdr, body)
	e.mu.Unlock()
	e.hellos.Add(1)
	t := time.NewTimer(e.front.Lim.HelloTimeout)
	defer t.Stop()
	select {
	case err := <-ch:
		if err == nil {
			return nil
		}
		e.forget(seq)
		return err
	case <-t.C:
		e.forget(seq)
		e.link.publish(bus.KindDisconnect, &bus.Header{Seq: seq}, nil)
		return &wsconn.CloseError{Code: wire.CodeShutdown, Reason: "the session did not answer in time; retry"}
	case <-cn.Done:
		e.forget(seq)
		e.link.publish(bus.KindDisconnect, &bus.Header{Seq: seq}, nil)
		return errors.New("connection closed before the welcome")
	}
}

// forget removes connection seq and its place in the round.
func (e *Edge) forget(seq uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ec := e.conns[seq]; ec != nil {
		e.hists.lose(ec)
	}
	delete(e.conns, seq)
	e.dropMemberLocked(seq)
}

// dropMemberLocked removes an unanswered member from the round being
// collected (its update will not come through this edge).
func (e *Edge) dropMemberLocked(seq uint64) {
	r := e.round
	if r == nil || r.flushed {
		return
	}
	if answered, ok := r.members[seq]; ok && !answered {
		delete(r.members, seq)
		r.waiting--
		if r.waiting == 0 {
			e.flushLocked(r)
		}
	}
}

// acceptUpdate implements handler: decoded and validated once, outside
// the edge's lock, and added to the round's sum.
func (e *Edge) acceptUpdate(cn *wsconn.Conn, u wire.UpdateFrame, frameLen int) error {
	e.mu.Lock()
	if r := e.round; r != nil && r.shared {
		e.mu.Unlock()
		// As at the session: an update of its own would show a shared-noise
		// device's release with a share of the noise.
		return fmt.Errorf("%w: an update frame in a shared-noise session, whose devices send only masked inputs", wire.ErrBadFrame)
	}
	r, ok, err := e.checkUpdateLocked(cn, u.T)
	e.mu.Unlock()
	if !ok || err != nil {
		return err
	}
	vec := e.vec(r.dim)
	norm, err := mechanism.DecodeNorm(*vec, u.Payload)
	if err != nil {
		e.vecs.Put(vec)
		return fmt.Errorf("%w: update payload: %v", wire.ErrBadFrame, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	keep := false // the vector waits for its decision (the device's history)
	defer func() {
		if !keep {
			e.vecs.Put(vec)
		}
	}()
	if r2, ok, err := e.checkUpdateLocked(cn, u.T); !ok || err != nil || r2 != r {
		return err
	}
	r.members[cn.Seq] = true
	r.waiting--
	ec := e.conns[cn.Seq]
	hist := r.historyOf(ec)
	// The session's norm bound, then the tests of its public parameters,
	// on the message and on the device's history here (edgehist.go).
	var refused error
	switch {
	case !(norm <= r.bound):
		refused = errors.New("rejected: " + plausible.NormWords(norm, r.bound))
	case r.chk != nil:
		refused = check.Message(r.chk, *vec, norm, hist)
	}
	if refused != nil {
		e.front.Met.RejectedUpdates.Add(1)
		// The device reads the test's reason; the teacher the plain words.
		why := plausible.TeacherWords(refused, norm, r.bound)
		e.front.Log.Warn("update rejected", "device", wsconn.ShortID(cn.ID), "round", u.T, "norm", norm, "why", refused.Error())
		if ec := e.conns[cn.Seq]; ec != nil {
			ec.assigned = 0
		}
		cn.SendControl(wire.Decision{T: u.T, State: wire.Excluded, Reason: refused.Error()})
		e.link.publish(bus.KindReject, &bus.Header{Epoch: r.epoch, Seq: cn.Seq, ID: cn.ID, T: u.T, Norm: norm, Reason: why}, nil)
	} else {
		r.add(*vec, cn.ID, cn.Seq, frameLen)
		e.front.Met.Updates.Add(1)
		if ec != nil && hist != nil {
			e.hists.lose(ec)
			ec.pending, ec.pendingT, keep = vec, u.T, true
		}
	}
	if r.waiting == 0 {
		e.flushLocked(r)
	}
	return nil
}

// checkUpdateLocked looks at an update for round t from cn: ok is set
// for one to add to the open round, err for one the device had no
// business sending; otherwise it is late and dropped.
func (e *Edge) checkUpdateLocked(cn *wsconn.Conn, t int) (r *edgeRound, ok bool, err error) {
	ec := e.conns[cn.Seq]
	if ec == nil || ec.cn != cn {
		return nil, false, nil
	}
	r = e.round
	if r != nil && r.t == t && !r.flushed {
		answered, member := r.members[cn.Seq]
		switch {
		case !member:
			return nil, false, fmt.Errorf("update for round %d that was not assigned to this device", t)
		case answered:
			return nil, false, fmt.Errorf("duplicate update for round %d", t)
		}
		return r, true, nil
	}
	if t > e.lastRound {
		return nil, false, fmt.Errorf("update for round %d that was not assigned to this device", t)
	}
	// A round this edge already sent on (or dropped when the session
	// process changed): the device is excluded from it.
	e.front.Met.LateUpdates.Add(1)
	return nil, false, nil
}

func (e *Edge) vec(dim int) *[]float64 { return wsconn.TakeVec(e.vecs, dim) }

// status implements handler: an update the edge still holds is pending;
// anything else is the session's to answer (after whatever the edge sent
// before, so after the sum that carries the update).
func (e *Edge) status(cn *wsconn.Conn, t int) error {
	e.mu.Lock()
	r := e.round
	holding := r != nil && r.t == t && !r.flushed && r.members[cn.Seq]
	if !holding {
		e.link.publish(bus.KindStatus, &bus.Header{Seq: cn.Seq, ID: cn.ID, T: t}, nil)
	}
	e.mu.Unlock()
	if holding {
		cn.SendWait(wire.Decision{T: t, State: wire.Pending})
	}
	return nil
}

// leave implements handler.
func (e *Edge) leave(cn *wsconn.Conn, l wire.Leave) {
	body, err := wire.EncodeControl(l)
	if err != nil {
		return
	}
	e.front.Met.Leaves.Add(1)
	e.mu.Lock()
	defer e.mu.Unlock()
	// Sent before the member is dropped (which may send the round's
	// sum): the session drops it from the cohort first.
	e.link.publish(bus.KindLeave, &bus.Header{Seq: cn.Seq, ID: cn.ID}, body)
	e.dropMemberLocked(cn.Seq)
}

// disconnected implements handler.
func (e *Edge) disconnected(cn *wsconn.Conn) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ec := e.conns[cn.Seq]
	if ec == nil || ec.cn != cn {
		return
	}
	// An update waiting for its decision is given up: its history no
	// longer knows whether it holds every inclusion, and starts again at
	// the device's next round here.
	e.hists.lose(ec)
	delete(e.conns, cn.Seq)
	if r := e.round; r != nil && !r.flushed && r.members[cn.Seq] && slices.Contains(r.seqs, cn.Seq) {
		// Its update is in the sum being collected: the sum goes first,
		// so that the session counts it before it hears the device has
		// gone (and does not drop it from the round, which would refuse
		// the whole sum).
		e.sendSumLocked(r, &bus.Header{Epoch: r.epoch, T: r.t})
	}
	e.link.publish(bus.KindDisconnect, &bus.Header{Seq: cn.Seq, ID: cn.ID}, nil)
	e.dropMemberLocked(cn.Seq)
}

// evictInactive implements handler: the session keeps the device table.
func (e *Edge) evictInactive() {}

// Devices is the number of device connections the edge holds.
func (e *Edge) Devices() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.conns)
}

// Handler returns the edge's HTTP handler: /ws, /healthz, /metrics and
// the page's assets itself, everything else (the page's /api/ calls, the
// dashboard) proxied to the session process at sessionURL (nil: 404).
func (e *Edge) Handler(assets site.Assets, sessionURL *url.URL) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws", e.front.ServeWS)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := e.Healthy(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if !e.front.MetricsAllowed(w, r) {
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		e.WriteMetrics(w)
	})
	site.RegisterAssets(mux, assets)
	local := site.SecurityHeaders(mux)
	if sessionURL == nil {
		return local
	}
	// The session's own answers carry its headers; the edge's are for
	// what it serves itself.
	top := http.NewServeMux()
	for _, p := range []string{"GET /ws", "GET /healthz", "GET /metrics", "GET /{$}", "GET /web/"} {
		top.Handle(p, local)
	}
	top.Handle("/", httputil.NewSingleHostReverseProxy(sessionURL))
	return top
}

// WriteMetrics writes the edge's metrics in the Prometheus text format.
func (e *Edge) WriteMetrics(w io.Writer) error {
	return e.front.Met.Write(w, func() []metrics.Row {
		rows := e.metricRows()
		out := make([]metrics.Row, len(rows))
		for i, r := range rows {
			out[i] = metrics.Row(r)
		}
		return out
	})
}

// metricRow is one metric read at scrape time: a metrics.Row, written
// unkeyed in the table of rows.
type metricRow metrics.Row

// metricRows reads the edge's rows of /metrics.
func (e *Edge) metricRows() []metricRow {
	m := e.front.Met
	e.mu.Lock()
	devices := len(e.conns)
	alive := 0.0
	if e.sessionAliveLocked() {
		alive = 1
	}
	e.mu.Unlock()
	rows := []metricRow{
		{"browserfl_devices_connected", "Device websocket connections open (with or without hello).", "gauge", float64(m.Connected.Load())},
		{"browserfl_edge_devices", "Admitted device connections this edge holds.", "gauge", float64(devices)},
		{"browserfl_edge_session_alive", "1 if the session process was heard from within the session timeout.", "gauge", alive},
		{"browserfl_edge_hellos_total", "Hellos forwarded to the session.", "counter", float64(e.hellos.Load())},
		{"browserfl_edge_aggregates_total", "Round sums sent to the session.", "counter", float64(e.aggregates.Load())},
		{"browserfl_edge_aggregated_updates_total", "Updates carried by those sums.", "counter", float64(e.aggMembers.Load())},
		{"browserfl_edge_session_changes_total", "Times a new session process was seen.", "counter", float64(e.epochChange.Load())},
		{"browserfl_edge_secagg_up_total", "Secure aggregation frames relayed from devices to the session.", "counter", float64(e.secAggUp.Load())},
		{"browserfl_edge_secagg_down_total", "Secure aggregation frames relayed from the session to devices.", "counter", float64(e.secAggDown.Load())},
		{"browserfl_secagg_refused_total", "Secure aggregation frames refused here (out of place); the sender's connection is closed.", "counter", float64(m.SecAggRefused.Load())},
		{"browserfl_cluster_bus_errors_total", "Cluster envelopes that failed to decode or publish.", "counter", float64(e.link.errors.Load())},
		{"browserfl_cluster_bytes_in_total", "Envelope bytes received from the session.", "counter", float64(e.link.inBytes.Load())},
		{"browserfl_cluster_bytes_out_total", "Envelope bytes published to the session.", "counter", float64(e.link.outBytes.Load())},
		{"browserfl_auth_failures_total", "Hellos refused for the join code.", "counter", float64(m.AuthFailures.Load())},
		{"browserfl_bad_frames_total", "Connections closed for a bad frame.", "counter", float64(m.BadFrames.Load())},
		{"browserfl_slow_consumers_total", "Connections dropped for a full outbox, a write timeout or a missing pong.", "counter", float64(m.SlowConsumers.Load())},
		{"browserfl_updates_total", "Updates added to a round's sum.", "counter", float64(m.Updates.Load())},
		{"browserfl_late_updates_total", "Updates dropped because their round's sum had been sent.", "counter", float64(m.LateUpdates.Load())},
		{"browserfl_rejected_updates_total", "Updates rejected by validation (norm above the session's bound).", "counter", float64(m.RejectedUpdates.Load())},
		{"browserfl_frames_in_total", "Frames read after hello.", "counter", float64(m.FramesIn.Load())},
		{"browserfl_frames_out_total", "Frames written.", "counter", float64(m.FramesOut.Load())},
		{"browserfl_bytes_in_total", "Websocket payload bytes read.", "counter", float64(m.BytesIn.Load())},
	}
	return rows
}
