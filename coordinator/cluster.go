package coordinator

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
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"browserfl/coordinator/bus"
	"browserfl/coordinator/gate"
	"browserfl/coordinator/view"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
	"browserfl/shared/wire"
)

// SessionNodeConfig configures the session process of the cluster shape
// (docs/cluster.md).
type SessionNodeConfig struct {
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

// SessionNode serves a Coordinator's session to edge processes over NATS:
// edges hold the devices' websockets, the node samples, commits and
// decides as the one-process coordinator does, through the same code
// (a device on an edge is a remoteLink to the round logic).
type SessionNode struct {
	c     *Coordinator
	cfg   SessionNodeConfig
	nc    *nats.Conn
	epoch uint64
	log   *slog.Logger

	mu    sync.Mutex // guards edges and links; taken after c.mu, never before
	edges map[string]*edgeState
	links map[linkKey]*remoteLink

	// counters (/metrics)
	busErrors     atomic.Int64 // envelopes that failed to decode or to publish
	busDropped    atomic.Int64 // envelopes dropped: an edge's queue was full
	aggregates    atomic.Int64 // aggregates accepted
	refusedAggs   atomic.Int64 // aggregates refused whole
	unknownEdges  atomic.Int64 // envelopes on the subject of an edge not in cfg.Edges
	badHellos     atomic.Int64 // hellos refused for their form (raw credentials, bad digests)
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
	resync   bool // beats ask for the edge's roster until a whole one arrives
	devices  int  // admitted devices, as the edge last reported
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
	n    *SessionNode
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

// ErrNotSummable is returned by NewSessionNode for a session whose server
// half needs every update on its own: edges only forward sums.
var ErrNotSummable = errors.New("coordinator: the cluster shape needs a server half that takes summed updates (optim.SumApplier)")

// NewSessionNode attaches the cluster's session side to c (before c.Run).
func NewSessionNode(c *Coordinator, cfg SessionNodeConfig) (*SessionNode, error) {
	if cfg.Conn == nil {
		return nil, errors.New("coordinator: SessionNodeConfig.Conn is required")
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
	if c.server != nil {
		if _, ok := c.server.(optim.SumApplier); !ok {
			return nil, fmt.Errorf("%w: algorithm %q", ErrNotSummable, c.sess.Algorithm)
		}
	} else if c.cfg.NewServer != nil {
		// A lobby: the server half is built at Start; try the template.
		if s, err := c.cfg.NewServer(c.sess); err == nil {
			if _, ok := s.(optim.SumApplier); !ok {
				return nil, fmt.Errorf("%w: algorithm %q", ErrNotSummable, c.sess.Algorithm)
			}
		}
	}
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("coordinator: epoch: %w", err)
	}
	n := &SessionNode{c: c, cfg: cfg, nc: cfg.Conn, epoch: binary.LittleEndian.Uint64(b[:]) | 1, log: c.front.Log,
		edges: map[string]*edgeState{}, links: map[linkKey]*remoteLink{}}
	c.mu.Lock()
	c.node = n
	c.mu.Unlock()
	return n, nil
}

// Run receives the edges' envelopes and beats until ctx is done.
func (n *SessionNode) Run(ctx context.Context) error {
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
func (n *SessionNode) edge(ctx context.Context, id string) *edgeState {
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

func (n *SessionNode) serveEdge(ctx context.Context, es *edgeState) {
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
func (n *SessionNode) publish(edge string, kind byte, h *bus.Header, body []byte) bool {
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

// sendRounds publishes round t to every edge that holds cohort members
// (called by beginRound under c.mu, after queueing the frames).
func (n *SessionNode) sendRounds(t int) {
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
	c := n.c
	bound := c.bound
	if math.IsInf(bound, 1) {
		bound = 0
	}
	sess := c.sess
	for _, o := range outs {
		n.publish(o.edge, bus.KindRound, &bus.Header{T: t, Seqs: o.seqs, Marks: o.marks, Dim: c.sess.Dim, Bound: bound,
			DeadlineMillis: c.sess.DeadlineMillis, Session: &sess}, o.frame)
	}
}

// beat tells every live edge where the session stands and gives up the
// edges not heard from for EdgeTimeout. It publishes under c.mu, so a
// beat that says round t committed follows round t's decisions on every
// edge's subject.
func (n *SessionNode) beat() {
	c := n.c
	var lost []*remoteLink
	c.mu.Lock()
	b := bus.SessionBeat{JoinCodeHash: bus.CodeDigest(c.cfg.JoinCode), Committed: c.committed, Finished: c.finished}
	if c.round != nil {
		b.Open = c.round.t
	}
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
	c.mu.Unlock()
	for _, l := range lost {
		c.disconnectedLink(l)
	}
}

// dropLinksLocked forgets every link of an edge and returns them.
func (n *SessionNode) dropLinksLocked(edge string) []*remoteLink {
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
func (n *SessionNode) link(edge string, seq uint64) *remoteLink {
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
func (n *SessionNode) handle(ctx context.Context, es *edgeState, b []byte) {
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
		n.c.disconnectedLink(l)
	}
	c := n.c
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
			c.rejectedAtEdge(l, h.T, h.Norm, h.Reason)
		}
	case bus.KindStatus:
		es.waitHello(h.Seq)
		l := n.link(es.id, h.Seq)
		if l == nil || l.id != h.ID {
			return
		}
		dec, err := c.decision(h.ID, h.T)
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
			c.leaveLink(l, lv)
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
			c.disconnectedLink(l)
		}
	case bus.KindRoster:
		n.roster(es, h)
	case bus.KindEdgeBeat:
		n.mu.Lock()
		es.devices = h.Devices
		n.mu.Unlock()
	default:
		n.busErrors.Add(1)
	}
	_ = ctx
}

// hello authenticates a device's hello forwarded by an edge and binds it
// to a remoteLink; the welcome (or the reason to close) goes back on the
// edge's subject.
func (n *SessionNode) hello(edge string, h bus.Header, body []byte) {
	m, err := wire.DecodeControl(body)
	hello, ok := m.(wire.Hello)
	if err != nil || !ok {
		n.busErrors.Add(1)
		n.publish(edge, bus.KindClose, &bus.Header{Seq: h.Seq, Code: wire.CodeBadFrame, Reason: "hello expected"}, nil)
		return
	}
	cred, err := helloCred(h, hello)
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
	_, err = n.c.admitCred(l, hello, cred)
	if err == nil {
		// The link may have been dropped while the hello was decided (the
		// edge restarted, or was given up): then the device is not there.
		n.mu.Lock()
		kept := n.links[linkKey{edge, h.Seq}] == l
		n.mu.Unlock()
		if !kept {
			n.c.disconnectedLink(l)
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
func helloCred(h bus.Header, hello wire.Hello) (*busCred, error) {
	if hello.JoinCode != "" || hello.Secret != "" {
		return nil, errRawCredential
	}
	code, err := bus.ParseDigest(h.CodeHash)
	if err != nil {
		return nil, fmt.Errorf("join code: %w", err)
	}
	secret, err := bus.ParseDigest(h.SecretHash)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	return &busCred{codeHash: code, secretHash: secret}, nil
}

// roster adopts the devices an edge holds (after this process started,
// or after the edge was given up): each is bound to a remoteLink as if
// it had said hello, and its pending round is answered. Once every chunk
// of a roster has arrived, links to connections the edge no longer holds
// are dropped (a disconnect that was lost) and the edge counts as in
// sync; a roster with a lost chunk leaves the resync asked for.
func (n *SessionNode) roster(es *edgeState, h bus.Header) {
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
	c := n.c
	for _, l := range stale {
		c.disconnectedLink(l)
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
			err = c.store.AuthenticateHash(e.ID, secretHash)
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
		c.mu.Lock()
		d := c.devices[e.ID]
		err = nil
		if d != nil && d.conn == link(l) {
			// Bound already (a repeated roster). Its pending round is
			// answered again unless it is still this process's open
			// round (then the round's own decision will come).
			again := e.Pending > 0 && d.round != e.Pending
			c.mu.Unlock()
			if again {
				var dec wire.Decision
				if dec, err = c.decision(e.ID, e.Pending); err == nil && dec.State != wire.Pending {
					l.SendControl(dec)
				}
			}
		} else {
			nick, _ := gate.NormalizeNickname(e.Nickname) // "" if NFKC made it invalid
			err = c.bindLocked(l, nick, e.Pending, nil)
			c.mu.Unlock()
		}
		if ce := (*wsconn.CloseError)(nil); errors.As(err, &ce) && ce.Code == wire.CodeRemoved {
			// Removed by the teacher while the session process was away.
			l.CloseWith(ce.Code, ce.Reason)
		} else if err != nil {
			n.log.Warn("adopting a device from an edge's roster", "edge", edge, "err", err)
		}
	}
}

// aggregate hands an edge's pre-aggregated round to the coordinator.
func (n *SessionNode) aggregate(edge string, h bus.Header, body []byte) {
	c := n.c
	if h.Epoch != n.epoch {
		// For another session process's round: its devices learn
		// "excluded" from this one when they ask.
		n.refusedAggs.Add(1)
		return
	}
	links := make([]link, len(h.IDs))
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
	var missing []link
	for i, s := range h.MissingSeqs {
		if l := n.link(edge, s); l != nil && l.id == h.Missing[i] {
			missing = append(missing, l)
		}
	}
	if c.acceptAggregate(h.T, links, h.IDs, body, h.Bytes, missing) {
		n.aggregates.Add(1)
	} else if len(h.IDs) > 0 {
		n.refusedAggs.Add(1)
	}
}

// acceptAggregate takes an edge's sum of the updates of ids (links[i] is
// nil for a connection the node does not know) for round t. The sum is
// all or nothing: if any member is not an open cohort member of round t
// bound to that edge connection (it reconnected elsewhere, was dropped,
// answered twice), it would take the round past the cohort m (rounds
// over-select, cohort.go), or the sum fails validation (dimension,
// finite, norm at most len(ids) times the update bound), none is
// counted, and the
// members still in the round are excluded at once with a reason. The
// members in missing did not answer the edge by its deadline: they are
// excluded now, so the round need not wait for them.
func (c *Coordinator) acceptAggregate(t int, links []link, ids []string, body []byte, bytesIn int64, missing []link) bool {
	vec := c.vec(c.sess.Dim)
	decodeErr := bus.DecodeVector(*vec, body)
	norm := math.NaN()
	if decodeErr == nil {
		if err := mechanism.CheckFinite(*vec); err == nil {
			norm = mechanism.Norm(*vec)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.signal()
	or := c.round
	for _, l := range missing {
		if d := c.devices[l.DeviceID()]; d != nil && d.conn == l && or != nil && or.t == t && d.round == t &&
			or.cohort[d.id] && or.updates[d.id] == nil && !or.closed {
			delete(or.cohort, d.id)
			or.dropped[d.id] = true
			d.round = 0
			d.misses++
			d.conn.SendControl(wire.Decision{T: t, State: wire.Excluded, Reason: "no update before the deadline"})
		}
	}
	if or != nil {
		or.checkAllIn()
	}
	if len(ids) == 0 {
		c.vecs.Put(vec)
		return true
	}
	if t <= c.committed || or == nil || or.t != t || or.closed {
		// Late: whoever is still in round t is excluded at its commit.
		c.front.Met.LateUpdates.Add(int64(len(ids)))
		c.vecs.Put(vec)
		return false
	}
	why := ""
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		d := c.devices[id]
		switch {
		case links[i] == nil || d == nil || d.conn != links[i]:
			why = "a member's connection is not the one the edge named (it reconnected elsewhere)"
		case seen[id]:
			why = "a member appears twice"
		case !or.cohort[id] || d.round != t || or.updates[id] != nil:
			why = "a member is not waiting for its update in this round"
		}
		seen[id] = true
		if why != "" {
			break
		}
	}
	if why == "" {
		switch {
		case len(or.updates)+len(ids) > c.sess.Cohort:
			// Over-selection (cohort.go) asks more than m devices; a
			// round never includes more than m (the server half refuses
			// more), and an edge's sum is all or nothing.
			why = fmt.Sprintf("the round has %d updates already; a sum of %d more would pass the cohort m = %d", len(or.updates), len(ids), c.sess.Cohort)
		case decodeErr != nil:
			why = decodeErr.Error()
		case math.IsNaN(norm):
			why = "the sum is not finite"
		case !(norm <= float64(len(ids))*c.bound):
			why = fmt.Sprintf("the sum's norm %.4g is above %d times the session's bound %.4g", norm, len(ids), c.bound)
			c.front.Met.RejectedUpdates.Add(int64(len(ids)))
		}
	}
	if why != "" {
		c.vecs.Put(vec)
		c.front.Log.Warn("edge aggregate refused; its members are excluded", "round", t, "members", len(ids), "why", why)
		for _, id := range ids {
			d := c.devices[id]
			if d == nil || d.round != t || !or.cohort[id] || or.updates[id] != nil {
				continue
			}
			delete(or.cohort, id)
			or.dropped[id] = true
			d.round = 0
			control(d.conn, wire.Decision{T: t, State: wire.Excluded, Reason: "the batch of your connection's server was refused: " + why})
		}
		or.checkAllIn()
		return false
	}
	for i, id := range ids {
		u := &update{agg: true}
		if i == 0 {
			u.vec = vec
		}
		or.updates[id] = u
		c.devices[id].misses, c.devices[id].proven = 0, true
	}
	or.bytesIn += bytesIn
	c.front.Met.Updates.Add(int64(len(ids)))
	or.checkAllIn()
	return true
}

// rejectedAtEdge removes a device whose update its edge rejected (the
// edge told the device) from round t. why is the edge's reason in plain
// words (cut to wire.MaxLeaveDetail bytes of valid UTF-8); without one,
// the norm bound's.
func (c *Coordinator) rejectedAtEdge(l link, t int, norm float64, why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, or := c.devices[l.DeviceID()], c.round
	if d == nil || d.conn != l || or == nil || or.t != t || !or.cohort[d.id] || or.updates[d.id] != nil || or.closed {
		return
	}
	if why == "" {
		why = optim.NormWords(norm, c.bound)
	}
	c.rejectUpdateLocked(d, or, t, plainReason(why))
}

// plainReason makes a reason from another process fit for the dashboard:
// valid UTF-8, no control characters, at most wire.MaxLeaveDetail bytes.
func plainReason(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	for len(s) > wire.MaxLeaveDetail {
		_, n := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-n]
	}
	return s
}

// Edges lists the edges the node knows, sorted by id.
func (n *SessionNode) Edges() []view.EdgeStatus {
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

// metricRows returns the node's rows of /metrics.
func (n *SessionNode) metricRows() []metricRow {
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
		{"browserfl_cluster_bytes_in_total", "Envelope bytes received from edges.", "counter", float64(n.inboundBytes.Load())},
		{"browserfl_cluster_bytes_out_total", "Envelope bytes published to edges.", "counter", float64(n.outboundBytes.Load())},
	}
	return rows
}
