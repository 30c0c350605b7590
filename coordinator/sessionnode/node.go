// Package sessionnode is the cluster shape's session side
// (docs/cluster.md): a Node serves a session core (coordinator) to edge
// processes over NATS. Edges hold the devices' websockets; the node turns
// their envelopes into the core's calls (a forwarded hello, a roster of
// the devices an edge holds, an edge's round sum, a status query, a
// leave, a disconnect, a device's secure aggregation frame) and the
// core's rounds, decisions and secure aggregation frames into envelopes, and beats where the session stands to every edge. A device
// on an edge is a remoteLink to the round logic (a coordinator.Link).
//
// The node sits above the session core and reads it only through
// Session, which *coordinator.Coordinator implements; the core calls the
// node back through coordinator.Relay (the rounds it sends, the edges on
// the dashboard, the node's rows of /metrics). Lock order: the session's
// lock before the node's, never the reverse. Only cmd/coordinator wires a
// node (internal/archtest).
package sessionnode

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"browserfl/coordinator"
	"browserfl/coordinator/bus"
	"browserfl/coordinator/metrics"
	"browserfl/coordinator/store"
	"browserfl/coordinator/view"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/wire"
)

// Session is the session core as the node sees it (*coordinator.Coordinator
// implements it; the methods' docs are there).
type Session interface {
	// Front and Store give the core's log and its device registry (a
	// roster's devices are checked against it).
	Front() *wsconn.Front
	Store() *store.Store
	// AttachNode binds the node to the core; it refuses a session whose
	// server half does not take sums (coordinator.ErrNotSummable).
	AttachNode(r coordinator.Relay) error
	// Beat calls publish with where the session stands, under its lock.
	Beat(publish func(bus.SessionBeat))
	AdmitForwarded(l coordinator.Link, h wire.Hello, codeHash, secretHash []byte) error
	Adopt(l coordinator.Link, id, nickname string, pending int, signKey string) error
	Decision(id string, t int) (wire.Decision, error)
	DisconnectedLink(l coordinator.Link)
	LeaveLink(l coordinator.Link, lv wire.Leave)
	RejectedAtEdge(l coordinator.Link, t int, norm float64, why string)
	AcceptAggregate(t int, links []coordinator.Link, ids []string, body []byte, bytesIn int64, missing []coordinator.Link) bool
	AcceptForwardedSecAgg(l coordinator.Link, b []byte) error
}

var (
	_ Session           = (*coordinator.Coordinator)(nil)
	_ coordinator.Relay = (*Node)(nil)
)

// Config configures the session process of the cluster shape
// (docs/cluster.md).
type Config struct {
	// Conn is the NATS connection (required). Give it unlimited
	// reconnects: the node outlives a NATS restart.
	Conn *nats.Conn
	// Prefix is the subjects' first token (default "browserfl"); one
	// NATS cluster can carry several sessions under different prefixes.
	Prefix string
	// BeatInterval is how often the session tells every edge where it
	// stands (default 1s).
	BeatInterval time.Duration
	// EdgeTimeout: an edge not heard from for this long is given up (its
	// devices count as disconnected until it resyncs; default 5s).
	EdgeTimeout time.Duration
	// HelloWorkers bounds the hellos being authenticated at once per edge
	// (default 256): a new device's registration waits for a store
	// commit, and concurrent ones share it.
	HelloWorkers int
	// Edges, if set, are the only edge ids the node listens to (those the
	// cluster's credentials were made for): an envelope on another
	// edge's subject is dropped and counted. The NATS permissions keep
	// every edge on its own subject; this keeps the node to the edges
	// the operator named even on a NATS cluster configured more loosely.
	Edges []string
}

// Node serves a session core's session to edge processes over NATS:
// edges hold the devices' websockets, the core samples, commits and
// decides as in the one-process shape, through the same code (a device
// on an edge is a remoteLink to the round logic).
type Node struct {
	s     Session
	cfg   Config
	nc    *nats.Conn
	epoch uint64
	log   *slog.Logger

	mu    sync.Mutex // guards edges and links; taken after the session's lock, never before
	edges map[string]*edgeState
	links map[linkKey]*remoteLink

	// counters (/metrics)
	busErrors     atomic.Int64 // envelopes that failed to decode or to publish
	busDropped    atomic.Int64 // envelopes dropped: an edge's queue was full
	aggregates    atomic.Int64 // aggregates accepted
	refusedAggs   atomic.Int64 // aggregates refused whole
	unknownEdges  atomic.Int64 // envelopes on the subject of an edge not in cfg.Edges
	badHellos     atomic.Int64 // hellos refused for their form (raw credentials, bad digests)
	secAggUnbound atomic.Int64 // secure aggregation frames for a connection the edge does not hold under that device
	edgesLost     atomic.Int64 // edges given up after EdgeTimeout
	inboundBytes  atomic.Int64 // envelope bytes received from edges
	outboundBytes atomic.Int64 // envelope bytes published to edges
}

type linkKey struct {
	edge string
	seq  uint64
}

// edgeState is what the node knows of one edge.
type edgeState struct {
	id       string
	instance uint64 // the edge process's random instance (a restarted edge gets a new one)
	lastSeen time.Time
	alive    bool
	resync   bool    // beats ask for the edge's roster until a whole one arrives
	devices  int     // admitted devices, as the edge last reported
	msgRate  float64 // the edge's per-connection message rate, as it last reported (0: not said)
	// mismatch counts consecutive beats at which the edge reported
	// another number of devices than it has links here.
	mismatch    int
	lastDevices int // devices at the previous beat
	// roster is the number of the roster being received and the
	// connections it named so far.
	roster       int
	rosterSeqs   map[uint64]bool
	rosterChunks map[int]bool
	queue        chan []byte
	// hellos being authenticated: a later envelope about the same
	// connection waits for its hello to finish.
	helloMu sync.Mutex
	hellos  map[uint64]chan struct{}
	sem     chan struct{}
	// the round being sent (sendRounds publishes it)
	roundT     int
	roundFrame []byte
	roundSeqs  []uint64
	roundMarks []bus.Mark // each member's history mark, beside roundSeqs
}

// remoteLink is a device held by an edge, as the round logic sees it.
type remoteLink struct {
	n    *Node
	edge string
	seq  uint64
	id   string
}

func (l *remoteLink) DeviceID() string      { return l.id }
func (l *remoteLink) SetDeviceID(id string) { l.id = id }

// sendRound queues the whole frame: the edge sends each of its devices
// the frame or its short form (Edge.roundLocked).
func (l *remoteLink) SendRound(f wsconn.OutFrame) int {
	f.Short = nil
	if !l.Send(f) {
		return 0
	}
	return len(f.Data)
}

func (l *remoteLink) Send(f wsconn.OutFrame) bool {
	if !f.Binary {
		l.n.publish(l.edge, bus.KindControl, &bus.Header{Seq: l.seq}, f.Data)
		return true
	}
	if f.Round == 0 {
		// Not a round frame: a secure aggregation frame for this device
		// alone (coordinator/secagg.go), which its edge relays.
		return l.n.publish(l.edge, bus.KindSecAggDown, &bus.Header{Seq: l.seq}, f.Data)
	}
	// A round frame: queued per edge, published once for all the
	// edge's cohort members by sendRounds.
	l.n.mu.Lock()
	if es := l.n.edges[l.edge]; es != nil {
		es.roundT, es.roundFrame = f.Round, f.Data
		es.roundSeqs = append(es.roundSeqs, l.seq)
		es.roundMarks = append(es.roundMarks, f.Mark)
	}
	l.n.mu.Unlock()
	return true
}

func (l *remoteLink) SendControl(m wire.Message) bool {
	b, err := wire.EncodeControl(m)
	if err != nil {
		return false
	}
	return l.n.publish(l.edge, bus.KindControl, &bus.Header{Seq: l.seq}, b)
}

func (l *remoteLink) CloseWith(code, reason string) {
	if code == wire.CodeShutdown {
		// The session process stopping is not the device's business:
		// its edge keeps it connected for the next session process.
		return
	}
	l.n.publish(l.edge, bus.KindClose, &bus.Header{Seq: l.seq, Code: code, Reason: reason}, nil)
	l.n.mu.Lock()
	if l.n.links[linkKey{l.edge, l.seq}] == l {
		delete(l.n.links, linkKey{l.edge, l.seq})
	}
	l.n.mu.Unlock()
}

// New attaches the cluster's session side to the session core s (before
// s runs): s refuses it, with coordinator.ErrNotSummable, when its server
// half needs every update on its own (edges only forward sums).
func New(s Session, cfg Config) (*Node, error) {
	if cfg.Conn == nil {
		return nil, errors.New("coordinator: sessionnode.Config.Conn is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "browserfl"
	}
	if err := bus.CheckEdgeID(cfg.Prefix); err != nil {
		return nil, fmt.Errorf("coordinator: subject prefix: %w", err)
	}
	if cfg.BeatInterval <= 0 {
		cfg.BeatInterval = time.Second
	}
	if cfg.EdgeTimeout <= 0 {
		cfg.EdgeTimeout = 5 * time.Second
	}
	if cfg.HelloWorkers <= 0 {
		cfg.HelloWorkers = 256
	}
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("coordinator: epoch: %w", err)
	}
	n := &Node{s: s, cfg: cfg, nc: cfg.Conn, epoch: binary.LittleEndian.Uint64(b[:]) | 1, log: s.Front().Log,
		edges: map[string]*edgeState{}, links: map[linkKey]*remoteLink{}}
	if err := s.AttachNode(n); err != nil {
		return nil, err
	}
	return n, nil
}

// Run receives the edges' envelopes and beats until ctx is done.
func (n *Node) Run(ctx context.Context) error {
	sub, err := n.nc.Subscribe(n.cfg.Prefix+".up.*", func(m *nats.Msg) {
		edge := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
		if bus.CheckEdgeID(edge) != nil {
			n.busErrors.Add(1)
			return
		}
		if len(n.cfg.Edges) > 0 && !slices.Contains(n.cfg.Edges, edge) {
			n.unknownEdges.Add(1)
			n.log.Warn("envelope on the subject of an edge without credentials: dropped", "edge", edge)
			return
		}
		n.inboundBytes.Add(int64(len(m.Data)))
		es := n.edge(ctx, edge)
		select {
		case es.queue <- m.Data:
		default:
			// Lost like a message NATS lost: the roster repairs what it
			// changed.
			n.busDropped.Add(1)
			n.mu.Lock()
			es.resync = true
			n.mu.Unlock()
		}
	})
	if err != nil {
		return fmt.Errorf("coordinator: subscribe to the edges: %w", err)
	}
	// Envelopes can be large (a round's aggregate); the defaults would
	// drop them as a slow consumer long before the queue fills.
	_ = sub.SetPendingLimits(-1, -1)
	defer sub.Unsubscribe()
	n.log.Info("session node ready", "prefix", n.cfg.Prefix, "epoch", n.epoch)
	tick := time.NewTicker(n.cfg.BeatInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			n.beat()
		}
	}
}

// edge returns the state of edge id, starting its handler on first contact.
func (n *Node) edge(ctx context.Context, id string) *edgeState {
	n.mu.Lock()
	defer n.mu.Unlock()
	es := n.edges[id]
	if es == nil {
		es = &edgeState{id: id, queue: make(chan []byte, 1<<16), hellos: map[uint64]chan struct{}{},
			sem: make(chan struct{}, n.cfg.HelloWorkers), resync: true}
		n.edges[id] = es
		go n.serveEdge(ctx, es)
	}
	return es
}

func (n *Node) serveEdge(ctx context.Context, es *edgeState) {
	for {
		select {
		case <-ctx.Done():
			return
		case b := <-es.queue:
			n.handle(ctx, es, b)
		}
	}
}

// publish sends an envelope to an edge; it reports whether it was handed
// to NATS (a lost one is repaired by the beats).
func (n *Node) publish(edge string, kind byte, h *bus.Header, body []byte) bool {
	h.Epoch = n.epoch
	b, err := bus.Encode(kind, h, body)
	if err == nil {
		err = n.nc.Publish(n.cfg.Prefix+".down."+edge, b)
	}
	if err != nil {
		n.busErrors.Add(1)
		n.log.Debug("publish to edge", "edge", edge, "err", err)
		return false
	}
	n.outboundBytes.Add(int64(len(b)))
	return true
}

// SendRounds publishes round t to every edge that holds cohort members,
// with the session's parameters sess and its update bound (called by the
// core under its lock, after queueing the frames).
func (n *Node) SendRounds(t int, sess wire.SessionParams, bound float64) {
	type out struct {
		edge  string
		frame []byte
		seqs  []uint64
		marks []bus.Mark
	}
	var outs []out
	n.mu.Lock()
	for id, es := range n.edges {
		if len(es.roundSeqs) > 0 && es.roundT == t {
			outs = append(outs, out{id, es.roundFrame, es.roundSeqs, es.roundMarks})
		}
		es.roundSeqs, es.roundMarks, es.roundFrame = nil, nil, nil
	}
	n.mu.Unlock()
	if math.IsInf(bound, 1) {
		bound = 0
	}
	for _, o := range outs {
		n.publish(o.edge, bus.KindRound, &bus.Header{T: t, Seqs: o.seqs, Marks: o.marks, Dim: sess.Dim, Bound: bound,
			DeadlineMillis: sess.DeadlineMillis, Session: &sess}, o.frame)
	}
}

// beat tells every live edge where the session stands and gives up the
// edges not heard from for EdgeTimeout. It publishes under the session's
// lock (Session.Beat), so a beat that says round t committed follows
// round t's decisions on every edge's subject.
func (n *Node) beat() {
	var lost []*remoteLink
	n.s.Beat(func(b bus.SessionBeat) { lost = n.publishBeat(b) })
	for _, l := range lost {
		n.s.DisconnectedLink(l)
	}
}

// publishBeat publishes b to every live edge and gives up the edges not
// heard from for EdgeTimeout, returning their links (called under the
// session's lock).
func (n *Node) publishBeat(b bus.SessionBeat) (lost []*remoteLink) {
	now := time.Now()
	type target struct {
		id     string
		resync bool
	}
	var targets []target
	n.mu.Lock()
	linksOn := map[string]int{}
	for k := range n.links {
		linksOn[k.edge]++
	}
	for id, es := range n.edges {
		// A device count that disagrees for five beats in a row while the
		// edge's own count stands still (hellos in flight disagree
		// briefly, and a join wave keeps the count moving) means a lost
		// hello or disconnect: the roster repairs it.
		if es.alive && es.devices != linksOn[id] && es.devices == es.lastDevices {
			es.mismatch++
			if es.mismatch >= 5 {
				es.resync, es.mismatch = true, 0
			}
		} else {
			es.mismatch = 0
		}
		es.lastDevices = es.devices
		if es.alive && now.Sub(es.lastSeen) > n.cfg.EdgeTimeout {
			es.alive = false
			n.edgesLost.Add(1)
			n.log.Warn("edge lost: its devices count as disconnected until it comes back", "edge", id,
				"silent_for", now.Sub(es.lastSeen).Round(time.Millisecond))
			lost = append(lost, n.dropLinksLocked(id)...)
		}
		if es.alive {
			targets = append(targets, target{id, es.resync})
		}
	}
	n.mu.Unlock()
	for _, t := range targets {
		bb := b
		bb.Resync = t.resync
		n.publish(t.id, bus.KindSessionBeat, &bus.Header{Beat: &bb}, nil)
	}
	return lost
}

// dropLinksLocked forgets every link of an edge and returns them.
func (n *Node) dropLinksLocked(edge string) []*remoteLink {
	var out []*remoteLink
	for k, l := range n.links {
		if k.edge == edge {
			out = append(out, l)
			delete(n.links, k)
		}
	}
	return out
}

// link returns the link of an edge's connection, nil if unknown.
func (n *Node) link(edge string, seq uint64) *remoteLink {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.links[linkKey{edge, seq}]
}

// waitHello waits until the hello of connection seq (if one is being
// authenticated) has been decided.
func (es *edgeState) waitHello(seq uint64) {
	es.helloMu.Lock()
	ch := es.hellos[seq]
	es.helloMu.Unlock()
	if ch != nil {
		<-ch
	}
}

// handle acts on one envelope from edge es, in the order the edge sent
// them (hellos are authenticated concurrently, and whatever follows
// about the same connection waits for its hello).
func (n *Node) handle(ctx context.Context, es *edgeState, b []byte) {
	kind, h, body, err := bus.Decode(b)
	if err != nil {
		n.busErrors.Add(1)
		n.log.Warn("bad envelope from an edge", "edge", es.id, "err", err)
		return
	}
	if h.Instance == 0 {
		n.busErrors.Add(1)
		return
	}
	var lost []*remoteLink
	n.mu.Lock()
	if es.instance != 0 && h.Instance != es.instance {
		// A restarted edge process: the old one's connections are gone.
		lost = n.dropLinksLocked(es.id)
		es.resync = true
		n.log.Warn("edge restarted (or two processes share its id)", "edge", es.id)
	}
	es.instance = h.Instance
	if !es.alive {
		es.alive, es.resync = true, true
		n.log.Info("edge joined", "edge", es.id)
	}
	es.lastSeen = time.Now()
	n.mu.Unlock()
	for _, l := range lost {
		n.s.DisconnectedLink(l)
	}
	c := n.s
	switch kind {
	case bus.KindHello:
		es.sem <- struct{}{}
		done := make(chan struct{})
		es.helloMu.Lock()
		if es.hellos[h.Seq] != nil {
			es.helloMu.Unlock()
			<-es.sem
			n.busErrors.Add(1) // the edge reused a connection number
			return
		}
		es.hellos[h.Seq] = done
		es.helloMu.Unlock()
		go func() {
			defer func() {
				es.helloMu.Lock()
				delete(es.hellos, h.Seq)
				es.helloMu.Unlock()
				close(done)
				<-es.sem
			}()
			n.hello(es.id, h, body)
		}()
	case bus.KindAggregate:
		for _, s := range h.Seqs {
			es.waitHello(s)
		}
		for _, s := range h.MissingSeqs {
			es.waitHello(s)
		}
		n.aggregate(es.id, h, body)
	case bus.KindReject:
		es.waitHello(h.Seq)
		if l := n.link(es.id, h.Seq); l != nil && l.id == h.ID && h.Epoch == n.epoch {
			c.RejectedAtEdge(l, h.T, h.Norm, h.Reason)
		}
	case bus.KindStatus:
		es.waitHello(h.Seq)
		l := n.link(es.id, h.Seq)
		if l == nil || l.id != h.ID {
			return
		}
		dec, err := c.Decision(h.ID, h.T)
		if err != nil {
			n.log.Warn("status query", "err", err)
			return
		}
		l.SendControl(dec)
	case bus.KindLeave:
		es.waitHello(h.Seq)
		m, err := wire.DecodeControl(body)
		lv, ok := m.(wire.Leave)
		if err != nil || !ok {
			n.busErrors.Add(1)
			return
		}
		if l := n.link(es.id, h.Seq); l != nil && l.id == h.ID {
			c.LeaveLink(l, lv)
		}
	case bus.KindDisconnect:
		es.waitHello(h.Seq)
		n.mu.Lock()
		l := n.links[linkKey{es.id, h.Seq}]
		// An empty id: a hello the edge gave up waiting for.
		match := l != nil && (h.ID == "" || l.id == h.ID)
		if match {
			delete(n.links, linkKey{es.id, h.Seq})
		}
		n.mu.Unlock()
		if match {
			c.DisconnectedLink(l)
		}
	case bus.KindSecAggUp:
		es.waitHello(h.Seq)
		n.secAgg(es.id, h, body)
	case bus.KindRoster:
		n.roster(es, h)
	case bus.KindEdgeBeat:
		n.mu.Lock()
		es.devices, es.msgRate = h.Devices, h.MsgRate
		n.mu.Unlock()
	default:
		n.busErrors.Add(1)
	}
	_ = ctx
}

// hello authenticates a device's hello forwarded by an edge and binds it
// to a remoteLink; the welcome (or the reason to close) goes back on the
// edge's subject.
func (n *Node) hello(edge string, h bus.Header, body []byte) {
	m, err := wire.DecodeControl(body)
	hello, ok := m.(wire.Hello)
	if err != nil || !ok {
		n.busErrors.Add(1)
		n.publish(edge, bus.KindClose, &bus.Header{Seq: h.Seq, Code: wire.CodeBadFrame, Reason: "hello expected"}, nil)
		return
	}
	codeHash, secretHash, err := helloCred(h, hello)
	if err != nil {
		n.badHellos.Add(1)
		n.log.Warn("hello from an edge refused", "edge", edge, "err", err)
		n.publish(edge, bus.KindClose, &bus.Header{Seq: h.Seq, Code: wire.CodeBadFrame, Reason: "the server could not forward the hello"}, nil)
		return
	}
	l := &remoteLink{n: n, edge: edge, seq: h.Seq}
	n.mu.Lock()
	n.links[linkKey{edge, h.Seq}] = l
	n.mu.Unlock()
	err = n.s.AdmitForwarded(l, hello, codeHash, secretHash)
	if err == nil {
		// The link may have been dropped while the hello was decided (the
		// edge restarted, or was given up): then the device is not there.
		n.mu.Lock()
		kept := n.links[linkKey{edge, h.Seq}] == l
		n.mu.Unlock()
		if !kept {
			n.s.DisconnectedLink(l)
		}
		return
	}
	n.mu.Lock()
	if n.links[linkKey{edge, h.Seq}] == l {
		delete(n.links, linkKey{edge, h.Seq})
	}
	n.mu.Unlock()
	code, reason := wire.CodeShutdown, "the session could not admit the device; retry"
	var ce *wsconn.CloseError
	if errors.As(err, &ce) {
		code, reason = ce.Code, ce.Reason
	} else {
		n.log.Warn("admitting a device from an edge", "edge", edge, "err", err)
	}
	n.publish(edge, bus.KindClose, &bus.Header{Seq: h.Seq, Code: code, Reason: reason}, nil)
}

// errRawCredential: an edge forwarded a hello with the join code or the
// secret in it; they must cross the bus as digests only.
var errRawCredential = errors.New("cluster message: a hello with a raw join code or secret (an edge forwards digests only)")

// helloCred checks a forwarded hello's form and returns its credentials:
// the body carries neither the join code nor the secret, the header
// both digests.
func helloCred(h bus.Header, hello wire.Hello) (code, secret []byte, err error) {
	if hello.JoinCode != "" || hello.Secret != "" {
		return nil, nil, errRawCredential
	}
	code, err = bus.ParseDigest(h.CodeHash)
	if err != nil {
		return nil, nil, fmt.Errorf("join code: %w", err)
	}
	secret, err = bus.ParseDigest(h.SecretHash)
	if err != nil {
		return nil, nil, fmt.Errorf("secret: %w", err)
	}
	return code, secret, nil
}

// roster adopts the devices an edge holds (after this process started,
// or after the edge was given up): each is bound to a remoteLink as if
// it had said hello, and its pending round is answered. Once every chunk
// of a roster has arrived, links to connections the edge no longer holds
// are dropped (a disconnect that was lost) and the edge counts as in
// sync; a roster with a lost chunk leaves the resync asked for.
func (n *Node) roster(es *edgeState, h bus.Header) {
	edge := es.id
	n.mu.Lock()
	if h.T != es.roster || es.rosterSeqs == nil {
		es.roster, es.rosterSeqs, es.rosterChunks = h.T, map[uint64]bool{}, map[int]bool{}
	}
	for _, e := range h.Roster {
		es.rosterSeqs[e.Seq] = true
	}
	es.rosterChunks[h.Chunk] = true
	var stale []*remoteLink
	if len(es.rosterChunks) == max(h.Chunks, 1) {
		// The whole roster: a link to a connection it does not name is
		// stale (a disconnect was lost), unless its hello is still
		// being decided (the edge leaves those out).
		es.helloMu.Lock()
		for k, l := range n.links {
			if k.edge == edge && !es.rosterSeqs[k.seq] && es.hellos[k.seq] == nil {
				stale = append(stale, l)
				delete(n.links, k)
			}
		}
		es.helloMu.Unlock()
		es.resync, es.rosterSeqs, es.rosterChunks = false, nil, nil
	}
	n.mu.Unlock()
	c := n.s
	for _, l := range stale {
		c.DisconnectedLink(l)
	}
	for _, e := range h.Roster {
		if e.ID == "" || e.Pending < 0 || wire.CheckNickname(e.Nickname) != nil {
			n.busErrors.Add(1)
			continue
		}
		// The edge proves that the device connected through it with the
		// digest of its secret: an edge cannot claim another edge's
		// device by its id alone.
		secretHash, err := bus.ParseDigest(e.SecretHash)
		if err == nil {
			err = c.Store().AuthenticateHash(e.ID, secretHash)
		}
		if err != nil {
			n.busErrors.Add(1)
			n.publish(edge, bus.KindClose, &bus.Header{Seq: e.Seq, Code: wire.CodeAuth, Reason: "unknown device id or wrong secret"}, nil)
			continue
		}
		key := linkKey{edge, e.Seq}
		n.mu.Lock()
		l := n.links[key]
		if l == nil || l.id != e.ID {
			l = &remoteLink{n: n, edge: edge, seq: e.Seq, id: e.ID}
			n.links[key] = l
		}
		n.mu.Unlock()
		err = c.Adopt(l, e.ID, e.Nickname, e.Pending, e.SignKey)
		if ce := (*wsconn.CloseError)(nil); errors.As(err, &ce) && ce.Code == wire.CodeRemoved {
			// Removed by the teacher while the session process was away.
			l.CloseWith(ce.Code, ce.Reason)
		} else if err != nil {
			n.log.Warn("adopting a device from an edge's roster", "edge", edge, "err", err)
		}
	}
}

// aggregate hands an edge's pre-aggregated round to the session core.
func (n *Node) aggregate(edge string, h bus.Header, body []byte) {
	if h.Epoch != n.epoch {
		// For another session process's round: its devices learn
		// "excluded" from this one when they ask.
		n.refusedAggs.Add(1)
		return
	}
	links := make([]coordinator.Link, len(h.IDs))
	if len(h.Seqs) != len(h.IDs) || len(h.MissingSeqs) != len(h.Missing) {
		n.busErrors.Add(1)
		n.refusedAggs.Add(1)
		return
	}
	for i, s := range h.Seqs {
		if l := n.link(edge, s); l != nil && l.id == h.IDs[i] {
			links[i] = l
		}
	}
	var missing []coordinator.Link
	for i, s := range h.MissingSeqs {
		if l := n.link(edge, s); l != nil && l.id == h.Missing[i] {
			missing = append(missing, l)
		}
	}
	if n.s.AcceptAggregate(h.T, links, h.IDs, body, h.Bytes, missing) {
		n.aggregates.Add(1)
	} else if len(h.IDs) > 0 {
		n.refusedAggs.Add(1)
	}
}

// secAgg hands the session core a secure aggregation frame that edge
// relayed from the device of its connection h.Seq. The frame speaks for
// the device bound to that connection on this edge's subject, on which
// only this edge may publish: an envelope naming a connection the edge
// does not hold, or another device than the one bound to it, is dropped
// and counted (a forged sender, or a connection the session already let
// go), and the frame's own sender must then be that device's client in
// the round (engine.SecAggRound). A frame of another session process's
// epoch is late. A frame the core refuses closes the device's
// connection, as on a websocket.
func (n *Node) secAgg(edge string, h bus.Header, body []byte) {
	if h.Epoch != n.epoch {
		return // relayed before the edge heard of this process: its round is gone
	}
	l := n.link(edge, h.Seq)
	if l == nil || l.id != h.ID {
		n.secAggUnbound.Add(1)
		n.log.Warn("secure aggregation frame for a device the edge does not hold on that connection: dropped",
			"edge", edge, "seq", h.Seq, "device", wsconn.ShortID(h.ID))
		return
	}
	if err := n.s.AcceptForwardedSecAgg(l, body); err != nil {
		code := wire.CodeProtocol
		if errors.Is(err, wire.ErrBadFrame) {
			code = wire.CodeBadFrame
		}
		l.CloseWith(code, err.Error())
		n.s.DisconnectedLink(l)
	}
}

// Edges lists the edges the node knows, sorted by id.
func (n *Node) Edges() []view.EdgeStatus {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]view.EdgeStatus, 0, len(n.edges))
	for id, es := range n.edges {
		out = append(out, view.EdgeStatus{ID: id, Alive: es.alive, Devices: es.devices,
			SilentMillis: time.Since(es.lastSeen).Milliseconds()})
	}
	slices.SortFunc(out, func(a, b view.EdgeStatus) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// MsgRate returns the lowest per-connection message rate the live edges
// reported, at least MinPaceRate; 0 if none reported one.
func (n *Node) MsgRate() float64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	low := 0.0
	for _, es := range n.edges {
		if es.alive && es.msgRate > 0 && (low == 0 || es.msgRate < low) {
			low = es.msgRate
		}
	}
	if low == 0 {
		return 0
	}
	return max(low, MinPaceRate)
}

// MinPaceRate is the lowest edge message rate (per second) the session
// paces its rounds for: an edge on the bus cannot slow the session's
// rounds by more than that by reporting a lower one.
const MinPaceRate = 1.0

// MetricRows returns the node's rows of /metrics.
func (n *Node) MetricRows() []metrics.Row {
	alive := 0
	for _, e := range n.Edges() {
		if e.Alive {
			alive++
		}
	}
	rows := []metricRow{
		{"browserfl_cluster_edges_alive", "Edges heard from within the edge timeout.", "gauge", float64(alive)},
		{"browserfl_cluster_edges_lost_total", "Edges given up after the edge timeout.", "counter", float64(n.edgesLost.Load())},
		{"browserfl_cluster_aggregates_total", "Edge aggregates accepted.", "counter", float64(n.aggregates.Load())},
		{"browserfl_cluster_aggregates_refused_total", "Edge aggregates refused whole (their members excluded).", "counter", float64(n.refusedAggs.Load())},
		{"browserfl_cluster_bus_errors_total", "Cluster envelopes that failed to decode or publish.", "counter", float64(n.busErrors.Load())},
		{"browserfl_cluster_bus_dropped_total", "Cluster envelopes dropped on a full edge queue.", "counter", float64(n.busDropped.Load())},
		{"browserfl_cluster_unknown_edge_total", "Cluster envelopes dropped: on the subject of an edge not named in -edges.", "counter", float64(n.unknownEdges.Load())},
		{"browserfl_cluster_bad_hellos_total", "Forwarded hellos refused for their form (a raw join code or secret, a bad digest).", "counter", float64(n.badHellos.Load())},
		{"browserfl_cluster_secagg_unbound_total", "Relayed secure aggregation frames dropped: for a connection the edge does not hold under that device (a forged sender, or one the session let go).", "counter", float64(n.secAggUnbound.Load())},
		{"browserfl_cluster_bytes_in_total", "Envelope bytes received from edges.", "counter", float64(n.inboundBytes.Load())},
		{"browserfl_cluster_bytes_out_total", "Envelope bytes published to edges.", "counter", float64(n.outboundBytes.Load())},
	}
	out := make([]metrics.Row, len(rows))
	for i, r := range rows {
		out[i] = metrics.Row(r)
	}
	return out
}

// metricRow is one metric read at scrape time: a metrics.Row, written
// unkeyed in the table of rows.
type metricRow metrics.Row

// Holds reports whether l is a device held by an edge (a link of this
// node).
func (n *Node) Holds(l coordinator.Link) bool {
	_, ok := l.(*remoteLink)
	return ok
}
