package sessionnode

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go"

	"browserfl/coordinator"
	cbus "browserfl/coordinator/bus"
	"browserfl/coordinator/edge"
	"browserfl/coordinator/site"
	"browserfl/shared/wire"
)

// The cluster bus's defences (docs/security.md, "A component on the
// cluster bus"): a real embedded NATS server with the generated keys,
// real connections.

// rawConn connects with nats.go directly (no reconnects), with the key
// in seed if any; async errors (permission violations) go to errs.
func rawConn(t *testing.T, url, seed string, errs chan<- error, extra ...nats.Option) (*nats.Conn, error) {
	t.Helper()
	opts := append([]nats.Option{nats.NoReconnect(), nats.Name("test"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errs != nil {
			errs <- err
		}
	})}, extra...)
	if seed != "" {
		k, err := nats.NkeyOptionFromSeed(seed)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, k)
	}
	nc, err := nats.Connect(url, opts...)
	if err == nil {
		t.Cleanup(nc.Close)
		// A round trip: the server has taken (or refused) the connection.
		err = nc.Flush()
	}
	return nc, err
}

// TestBusRefusesOutsiders: the embedded server admits only the keys
// the session process generated. A client without credentials, with a
// token, a user and password, or a well-formed key the server does not
// know is refused; the session's and an edge's keys are admitted.
func TestBusRefusesOutsiders(t *testing.T) {
	bus := testNATS(t)
	stranger, err := cbus.EnsureKeys(filepath.Join(t.TempDir(), "elsewhere"), []string{"e0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		seed  string
		extra []nats.Option
		ok    bool
	}{
		{"the session's key", bus.session(), nil, true},
		{"an edge's key", bus.edge("e0"), nil, true},
		{"no credentials", "", nil, false},
		{"a token", "", []nats.Option{nats.Token("s3cret")}, false},
		{"a user and password", "", []nats.Option{nats.UserInfo("session", "s3cret")}, false},
		{"a key from another cluster", cbus.EdgeSeedFile(stranger.Dir, "e0"), nil, false},
		{"another cluster's session key", cbus.SessionSeedFile(stranger.Dir), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rawConn(t, bus.URL, tc.seed, nil, tc.extra...)
			switch {
			case tc.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.ok && err == nil:
				t.Fatal("connected, want refused")
			case !tc.ok && !errors.Is(err, nats.ErrAuthorization):
				t.Fatalf("refused with %v, want an authorization violation", err)
			}
		})
	}
}

// TestBusConfinesEachComponent: every key may publish and subscribe on
// its own subjects only. An edge cannot speak as another edge or as the
// session, nor read another edge's traffic, the edges' side, everything
// or request/reply inboxes; the session cannot speak as an edge. Each
// refusal is the server's permission violation; a forged envelope on
// another edge's subject never reaches the session's subscription.
func TestBusConfinesEachComponent(t *testing.T) {
	bus := testNATS(t)
	// The session's subscription, as the session node has it.
	session, err := rawConn(t, bus.URL, bus.session(), nil)
	if err != nil {
		t.Fatal(err)
	}
	up := make(chan *nats.Msg, 16)
	if _, err := session.ChanSubscribe("browserfl.up.*", up); err != nil {
		t.Fatal(err)
	}
	// e1's subscription: the session's messages reach it.
	e1errs := make(chan error, 16)
	e1, err := rawConn(t, bus.URL, bus.edge("e1"), e1errs)
	if err != nil {
		t.Fatal(err)
	}
	down := make(chan *nats.Msg, 16)
	if _, err := e1.ChanSubscribe("browserfl.down.e1", down); err != nil {
		t.Fatal(err)
	}
	for _, nc := range []*nats.Conn{session, e1} {
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// What each may do arrives.
	if err := session.Publish("browserfl.down.e1", []byte("beat")); err != nil {
		t.Fatal(err)
	}
	if m := <-down; string(m.Data) != "beat" {
		t.Fatalf("e1 got %q", m.Data)
	}
	if err := e1.Publish("browserfl.up.e1", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if m := <-up; m.Subject != "browserfl.up.e1" || string(m.Data) != "hello" {
		t.Fatalf("the session got %q on %s", m.Data, m.Subject)
	}

	serrs := make(chan error, 16)
	sess2, err := rawConn(t, bus.URL, bus.session(), serrs)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		nc      *nats.Conn
		errs    chan error
		subject string
		publish bool
	}{
		{"an edge publishes on another edge's subject", e1, e1errs, "browserfl.up.e0", true},
		{"an edge publishes as the session", e1, e1errs, "browserfl.down.e1", true},
		{"an edge publishes to another edge", e1, e1errs, "browserfl.down.e0", true},
		{"an edge reads another edge's traffic", e1, e1errs, "browserfl.down.e0", false},
		{"an edge reads the edges' side", e1, e1errs, "browserfl.up.*", false},
		{"an edge reads everything", e1, e1errs, ">", false},
		{"an edge reads request/reply inboxes", e1, e1errs, "_INBOX.>", false},
		{"the session publishes as an edge", sess2, serrs, "browserfl.up.e0", true},
		{"the session reads the edges' inbound subjects", sess2, serrs, "browserfl.down.*", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.publish {
				err = tc.nc.Publish(tc.subject, []byte("forged"))
			} else {
				_, err = tc.nc.Subscribe(tc.subject, func(*nats.Msg) {})
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.nc.Flush()
			select {
			case err := <-tc.errs:
				if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), tc.subject) {
					t.Fatalf("got %v, want a permission violation on %s", err, tc.subject)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the server allowed it (no permission violation on %s)", tc.subject)
			}
		})
	}
	// e1's forgery on up.e0 never reached the session: what e1 publishes
	// next on its own subject is the session's next message.
	if err := e1.Publish("browserfl.up.e1", []byte("marker")); err != nil {
		t.Fatal(err)
	}
	if m := <-up; string(m.Data) != "marker" {
		t.Fatalf("the session received %q on %s before e1's marker", m.Data, m.Subject)
	}
}

// TestForgedAggregatesRefused drives a real session node (listening to
// edges fx and fy, the ones it has keys for) with fx holding two
// devices in every round. Round 1: edge fy publishes a sum naming fx's
// members on fx's subject (the bus refuses it: a permission violation)
// and fx then sends the honest sum: both members are included with it.
// Round 2: fy sends the same forgery on its own subject: the session
// refuses it (fy holds no such connections) and both members are
// excluded. Edge fz, with a key on the bus but not named to the
// session, is not listened to: its hello is dropped and counted.
func TestForgedAggregatesRefused(t *testing.T) {
	bus := testNATS(t)
	sess := twoDeviceSession("forged", 5000)
	srv, st := ncServerAndStore(t, sess)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Server: srv, Store: st, MinDevices: 2, Seed: 3, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	node := startNode(t, bus, c, Config{BeatInterval: 50 * time.Millisecond, EdgeTimeout: 10 * time.Second, Edges: []string{"fx", "fy"}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()

	fx := newFakeEdge(t, bus, "fx")
	fx.send(cbus.KindEdgeBeat, &cbus.Header{}, nil)
	ids := map[uint64]string{}
	for _, seq := range []uint64{1, 2} {
		fx.hello(seq, "join-me")
		w, ok := fx.control(seq).(wire.Welcome)
		if !ok {
			t.Fatal("no welcome")
		}
		ids[seq] = w.DeviceID
	}
	// fy forges with its own key; its connection reports what the bus
	// refused.
	fyErrs := make(chan error, 4)
	fy, err := rawConn(t, bus.URL, bus.edge("fy"), fyErrs)
	if err != nil {
		t.Fatal(err)
	}
	forge := func(subject string, h cbus.Header, body []byte) {
		t.Helper()
		h.Instance = 99
		b, err := cbus.Encode(cbus.KindAggregate, &h, body)
		if err != nil {
			t.Fatal(err)
		}
		if err := fy.Publish(subject, b); err != nil {
			t.Fatal(err)
		}
		fy.Flush()
	}
	sum := make([]float64, sess.Dim)
	forged := make([]float64, sess.Dim)
	for i := range sum {
		sum[i], forged[i] = 0.01*float64(i+1), -0.02
	}
	members := []string{ids[1], ids[2]}

	// Round 1.
	_, h, _ := fx.next(cbus.KindRound)
	r1 := h.T
	forge("browserfl.up.fx", cbus.Header{Epoch: h.Epoch, T: r1, IDs: members, Seqs: []uint64{1, 2}}, cbus.EncodeVector(nil, forged))
	select {
	case err := <-fyErrs:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("fy's forgery: %v, want a permission violation", err)
		}
	case <-ctx.Done():
		t.Fatal("the bus let fy publish on fx's subject")
	}
	fx.send(cbus.KindAggregate, &cbus.Header{Epoch: h.Epoch, T: r1, IDs: members, Seqs: []uint64{1, 2}}, cbus.EncodeVector(nil, sum))
	for _, seq := range []uint64{1, 2} {
		if d, ok := fx.control(seq).(wire.Decision); !ok || d.T != r1 || d.State != wire.Included {
			t.Fatalf("round %d: device %d got %+v, want included", r1, seq, d)
		}
	}
	rec, ok, err := st.Round(r1)
	if err != nil || !ok || len(rec.Included) != 2 {
		t.Fatalf("round %d record %+v (%v), want both included", r1, rec, err)
	}
	if got := node.aggregates.Load(); got != 1 {
		t.Fatalf("%d aggregates accepted in round %d, want fx's only", got, r1)
	}

	// Round 2: the forgery on fy's own subject.
	_, h, _ = fx.next(cbus.KindRound)
	r2 := h.T
	forge("browserfl.up.fy", cbus.Header{Epoch: h.Epoch, T: r2, IDs: members, Seqs: []uint64{1, 2}}, cbus.EncodeVector(nil, forged))
	for _, seq := range []uint64{1, 2} {
		d, ok := fx.control(seq).(wire.Decision)
		if !ok || d.T != r2 || d.State != wire.Excluded || !strings.Contains(d.Reason, "refused") {
			t.Fatalf("round %d: device %d got %+v, want excluded: the forged sum refused", r2, seq, d)
		}
	}
	waitCommitted(t, c, r2)
	if rec, ok, err := st.Round(r2); err != nil || !ok || len(rec.Included) != 0 {
		t.Fatalf("round %d record %+v (%v), want nothing included", r2, rec, err)
	}
	if got := node.refusedAggs.Load(); got != 1 {
		t.Errorf("browserfl_cluster_aggregates_refused_total %d, want 1", got)
	}

	// fz: a key on the bus, not an edge of this session.
	fz := newFakeEdge(t, bus, "fz")
	fz.hello(1, "join-me")
	for node.unknownEdges.Load() == 0 {
		if ctx.Err() != nil {
			t.Fatal("fz's hello was not counted as from an unknown edge")
		}
		time.Sleep(time.Millisecond)
	}
	node.mu.Lock()
	_, known := node.edges["fz"]
	node.mu.Unlock()
	if known {
		t.Error("the session node took fz as an edge")
	}
	cancel()
	<-runErr
}

// TestSessionRefusesMalformedHellos: a forwarded hello must carry the
// join code and the secret as digests, never the values. One with a
// raw join code or secret, a missing or short digest, is refused as a
// bad frame and counted; one whose code digest is wrong is refused for
// the join code.
func TestSessionRefusesMalformedHellos(t *testing.T) {
	bus := testNATS(t)
	sess := twoDeviceSession("hellos", 5000)
	srv, st := ncServerAndStore(t, sess)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Server: srv, Store: st, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	node := startNode(t, bus, c, Config{BeatInterval: time.Hour})
	fe := newFakeEdge(t, bus, "fx")
	code, secret := cbus.CodeDigest("join-me"), cbus.Digest("a secret")
	bad := 0
	for i, tc := range []struct {
		name         string
		hello        wire.Hello
		codeH, secH  string
		want         string
		badForm      bool
		wantWelcomed bool
	}{
		{"raw join code", wire.Hello{JoinCode: "join-me"}, code, secret, wire.CodeBadFrame, true, false},
		{"raw secret", wire.Hello{DeviceID: "00", Secret: "a secret"}, code, secret, wire.CodeBadFrame, true, false},
		{"no code digest", wire.Hello{}, "", secret, wire.CodeBadFrame, true, false},
		{"short secret digest", wire.Hello{}, code, secret[:20], wire.CodeBadFrame, true, false},
		{"wrong code digest", wire.Hello{}, cbus.Digest("join-you"), secret, wire.CodeJoinCode, false, false},
		{"well formed", wire.Hello{}, code, secret, "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seq := uint64(100 + i)
			tc.hello.Version = wire.Version
			hb, _ := wire.EncodeControl(tc.hello)
			fe.send(cbus.KindHello, &cbus.Header{Seq: seq, CodeHash: tc.codeH, SecretHash: tc.secH}, hb)
			if tc.wantWelcomed {
				if _, ok := fe.control(seq).(wire.Welcome); !ok {
					t.Fatal("no welcome")
				}
				return
			}
			for {
				_, h, _ := fe.next(cbus.KindClose, cbus.KindControl)
				if h.Seq != seq {
					continue
				}
				if h.Code != tc.want {
					t.Fatalf("closed with %q (%s), want %q", h.Code, h.Reason, tc.want)
				}
				break
			}
			if tc.badForm {
				bad++
			}
			if got := node.badHellos.Load(); got != int64(bad) {
				t.Fatalf("browserfl_cluster_bad_hellos_total %d, want %d", got, bad)
			}
		})
	}
}

// busTap collects every envelope on the subjects it subscribes to.
type busTap struct {
	mu  sync.Mutex
	all [][]byte
	ch  chan []byte
}

func (b *busTap) add(m *nats.Msg) {
	b.mu.Lock()
	b.all = append(b.all, bytes.Clone(m.Data))
	b.mu.Unlock()
	b.ch <- m.Data
}

// TestBusCarriesNoCredentials runs a real edge and session node and
// reads everything on the bus (the edges' side with the session's key,
// the edge's side with the edge's) while a device joins through the
// edge, resumes with its secret, and is refused with a wrong one. No
// envelope may contain the join code or the device's secret: a reader
// of the bus learns nothing it could say hello with. The device must
// still get its secret in the welcome and resume with it.
func TestBusCarriesNoCredentials(t *testing.T) {
	bus := testNATS(t)
	const code = "QX7KJOINCODE"
	sess := twoDeviceSession("tap", 5000)
	srv, st := ncServerAndStore(t, sess)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: code, Server: srv, Store: st, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	snc, err := cbus.ConnectNATS(cbus.NATSClientConfig{URL: bus.URL, Name: "session", NKey: bus.session(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer snc.Close()
	node, err := New(c, Config{Conn: snc, BeatInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tap := &busTap{ch: make(chan []byte, 1<<12)}
	for _, sub := range []struct{ seed, subject string }{{bus.session(), "browserfl.up.*"}, {bus.edge("e0"), "browserfl.down.e0"}} {
		nc, err := rawConn(t, bus.URL, sub.seed, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Subscribe(sub.subject, tap.add); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	enc, err := cbus.ConnectNATS(cbus.NATSClientConfig{URL: bus.URL, Name: "edge", NKey: bus.edge("e0"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	e, err := edge.New(edge.Config{ID: "e0", Conn: enc, Logger: log, BeatInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go node.Run(ctx)
	go c.Run(ctx)
	go e.Run(ctx)
	hs := httptest.NewServer(e.Handler(site.Assets{}, nil))
	defer hs.Close()
	for e.Healthy() != nil {
		if ctx.Err() != nil {
			t.Fatalf("the edge never became healthy: %v", e.Healthy())
		}
		time.Sleep(5 * time.Millisecond)
	}
	say := func(h wire.Hello) wire.Message {
		t.Helper()
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		h.Version = wire.Version
		hb, _ := wire.EncodeControl(h)
		if err := ws.Write(ctx, websocket.MessageText, hb); err != nil {
			t.Fatal(err)
		}
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m, err := wire.DecodeControl(b)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	w, ok := say(wire.Hello{JoinCode: code}).(wire.Welcome)
	if !ok || w.DeviceID == "" || len(w.Secret) < 32 {
		t.Fatalf("first hello: %+v, want a welcome with an id and a secret", w)
	}
	again, ok := say(wire.Hello{JoinCode: code, DeviceID: w.DeviceID, Secret: w.Secret}).(wire.Welcome)
	if !ok || again.DeviceID != w.DeviceID || again.Secret != "" {
		t.Fatalf("resuming with the secret: %+v, want a welcome for %s without a secret", again, w.DeviceID)
	}
	wrong := w.Secret[:len(w.Secret)-1] + "x"
	if m, ok := say(wire.Hello{JoinCode: code, DeviceID: w.DeviceID, Secret: wrong}).(wire.Error); !ok || m.Code != wire.CodeAuth {
		t.Fatalf("resuming with a wrong secret: %+v, want an auth error", m)
	}
	// Three hellos crossed the bus, and their welcomes or refusals came
	// back before the devices heard them: the tap has them.
	hellos := 0
	for hellos < 3 {
		select {
		case b := <-tap.ch:
			if kind, _, _, err := cbus.Decode(b); err == nil && kind == cbus.KindHello {
				hellos++
			}
		case <-ctx.Done():
			t.Fatalf("the tap saw %d hellos, want 3", hellos)
		}
	}
	tap.mu.Lock()
	defer tap.mu.Unlock()
	for _, secret := range []string{code, w.Secret, wrong} {
		for _, b := range tap.all {
			if bytes.Contains(b, []byte(secret)) {
				t.Fatalf("an envelope carries the credential %q: %q", secret, b)
			}
		}
	}
	t.Logf("%d envelopes read, none with the join code or a secret", len(tap.all))
}

// TestRosterNeedsTheSecret: an edge's roster adopts a device only with
// the digest of its secret, so an edge that learned a device's id
// cannot take the device over from the edge that holds it. Edge fy
// claims fx's device without a digest and with a wrong one: both are
// refused (closed for auth, counted) and the device stays bound to fx;
// fx's own roster, with the right digest, keeps it.
func TestRosterNeedsTheSecret(t *testing.T) {
	bus := testNATS(t)
	sess := twoDeviceSession("roster-claim", 5000)
	srv, st := ncServerAndStore(t, sess)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Server: srv, Store: st, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	node := startNode(t, bus, c, Config{BeatInterval: time.Hour})
	fx, fy := newFakeEdge(t, bus, "fx"), newFakeEdge(t, bus, "fy")
	fx.hello(1, "join-me")
	w, ok := fx.control(1).(wire.Welcome)
	if !ok {
		t.Fatal("no welcome")
	}
	// The session holds the device on one connection, and it is fx's
	// link (a device taken by another roster has its old link closed,
	// which drops it from the node).
	l0 := node.link("fx", 1)
	boundToFx := func() bool {
		return l0 != nil && node.link("fx", 1) == l0 && c.Status().Devices.Connected == 1
	}
	for _, tc := range []struct{ name, digest string }{
		{"no digest", ""},
		{"a wrong digest", cbus.Digest("a guess")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := node.busErrors.Load()
			fy.send(cbus.KindRoster, &cbus.Header{T: 1, Chunks: 1, Roster: []cbus.RosterEntry{{Seq: 5, ID: w.DeviceID, SecretHash: tc.digest}}}, nil)
			_, h, _ := fy.next(cbus.KindClose)
			if h.Seq != 5 || h.Code != wire.CodeAuth {
				t.Fatalf("fy's claim answered %+v, want its connection closed for auth", h)
			}
			if node.busErrors.Load() != before+1 {
				t.Error("the refused claim was not counted")
			}
			if !boundToFx() {
				t.Fatal("the device was taken from fx")
			}
		})
	}
	fx.send(cbus.KindRoster, &cbus.Header{T: 1, Chunks: 1, Roster: []cbus.RosterEntry{{Seq: 1, ID: w.DeviceID, SecretHash: cbus.Digest("secret1")}}}, nil)
	// A status query after the roster: once the session answers it, the
	// roster was handled (one goroutine per edge, in order).
	fx.send(cbus.KindStatus, &cbus.Header{Seq: 1, ID: w.DeviceID, T: 1}, nil)
	if d, ok := fx.control(1).(wire.Decision); !ok || d.T != 1 {
		t.Fatalf("status after fx's roster: %+v", d)
	}
	if !boundToFx() {
		t.Fatal("fx's own roster lost the device")
	}
}
