package coordinator

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"

	"browserfl/coordinator/store"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
	"browserfl/shared/wire"
)

// fakeWS is an in-memory websocket: it records what the coordinator
// writes and never delivers anything to read (the fuzz harness calls the
// frame handlers directly).
type fakeWS struct {
	mu     sync.Mutex
	frames [][]byte
	stamps []int64 // seq value at each write
	seq    *atomic.Int64
	closed bool
}

var errFakeClosed = errors.New("fake websocket closed")

func (f *fakeWS) Read(ctx context.Context) (websocket.MessageType, []byte, error) {
	<-ctx.Done()
	return 0, nil, ctx.Err()
}
func (f *fakeWS) Reader(ctx context.Context) (websocket.MessageType, io.Reader, error) {
	<-ctx.Done()
	return 0, nil, ctx.Err()
}
func (f *fakeWS) Write(_ context.Context, _ websocket.MessageType, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errFakeClosed
	}
	f.frames = append(f.frames, append([]byte(nil), p...))
	f.stamps = append(f.stamps, f.seq.Add(1))
	return nil
}
func (f *fakeWS) Close(websocket.StatusCode, string) error { return f.CloseNow() }
func (f *fakeWS) CloseNow() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return nil
}
func (f *fakeWS) Ping(context.Context) error { return nil }

type stampedDecision struct {
	wire.Decision
	stamp int64
}

// decisions returns the decisions (and welcome answers) written to f.
func (f *fakeWS) decisions() []stampedDecision {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []stampedDecision
	for i, b := range f.frames {
		m, err := wire.DecodeControl(b)
		if err != nil {
			continue // a binary round frame
		}
		switch m := m.(type) {
		case wire.Decision:
			out = append(out, stampedDecision{m, f.stamps[i]})
		case wire.Welcome:
			if m.Pending != nil {
				out = append(out, stampedDecision{*m.Pending, f.stamps[i]})
			}
		}
	}
	return out
}

var fuzzTrace bool

func (h *fuzzHarness) tracef(format string, args ...any) {
	if fuzzTrace {
		h.t.Logf(format, args...)
	}
}

type fuzzDevice struct {
	id, secret string
	sent       map[int]int64    // rounds it sent an update for (accepted or not): seq at the last send
	payloads   map[int][][]byte // the payloads it sent, by round
	cn         *wsconn.Conn
	ws         *fakeWS
	all        []*fakeWS // every connection it had
}

type fuzzHarness struct {
	t    *testing.T
	ctx  context.Context
	c    *Coordinator
	est  optim.Estimator
	devs []*fuzzDevice
	prog []byte
	open *openRound
	dim  int
	seq  atomic.Int64 // orders frames written and updates sent
	// conns are every connection opened, drained after each step.
	conns []fakeConn
}

type fakeConn struct {
	cn *wsconn.Conn
	ws *fakeWS
}

// drain writes every queued frame of every connection to its fake
// websocket, as the writer goroutine would.
func (h *fuzzHarness) drain() {
	for _, fc := range h.conns {
		for {
			select {
			case f := <-fc.cn.Queued():
				if f.Close == nil {
					fc.ws.Write(h.ctx, websocket.MessageText, f.Data)
				}
				continue
			default:
			}
			break
		}
	}
}

func (h *fuzzHarness) next() (byte, bool) {
	if len(h.prog) == 0 {
		return 0, false
	}
	b := h.prog[0]
	h.prog = h.prog[1:]
	return b, true
}

func (h *fuzzHarness) connect(d *fuzzDevice, hello wire.Hello) {
	ws := &fakeWS{seq: &h.seq}
	cn := wsconn.NewManual(h.c.front, ws)
	// No writer goroutine: drain moves queued frames to ws after every
	// step, so a frame's stamp is the step that queued it.
	h.conns = append(h.conns, fakeConn{cn, ws})
	d.all = append(d.all, ws)
	w, err := h.c.adm.admit(cn, hello, nil)
	h.drain()
	h.tracef("  hello pending %d -> %v %v", hello.Pending, w.Pending, err)
	if err != nil {
		cn.Shut()
		return
	}
	if d.id == "" {
		d.id, d.secret = w.DeviceID, w.Secret
	}
	d.cn, d.ws = cn, ws
}

func (h *fuzzHarness) disconnect(d *fuzzDevice) {
	if d.cn == nil {
		return
	}
	d.cn.Shut()
	h.c.DisconnectedLink(d.cn)
	d.cn = nil
}

// frame hands b to the coordinator as device d's frame, closing the
// connection on an error as ServeWS does.
func (h *fuzzHarness) frame(d *fuzzDevice, typ websocket.MessageType, b []byte) {
	if d.cn == nil {
		return
	}
	if err := h.c.front.HandleFrame(d.cn, typ, b, wire.Limits{MaxBytes: h.c.front.Lim.MaxFrameBytes}); err != nil {
		h.tracef("  frame error: %v", err)
		h.disconnect(d)
	}
}

func (h *fuzzHarness) payload(kind byte) []byte {
	x := make([]float64, h.dim)
	dec := make([]float64, h.dim)
	switch kind % 6 {
	case 0: // honest-sized
		for i := range x {
			b, _ := h.next()
			x[i] = float64(int8(b)) / 64
		}
	case 1:
		for i := range x {
			x[i] = 1e300
		}
	case 2: // NaN written into a valid payload
		p, _ := mechanism.Dense64{}.Compress(nil, dec, x, nil)
		binary.LittleEndian.PutUint64(p[len(p)-8:], math.Float64bits(math.NaN()))
		return p
	case 3: // wrong dimension
		p, _ := mechanism.Dense64{}.Compress(nil, make([]float64, h.dim-1), make([]float64, h.dim-1), nil)
		return p
	case 4: // raw bytes
		n, _ := h.next()
		out := make([]byte, int(n)%48)
		for i := range out {
			out[i], _ = h.next()
		}
		return out
	case 5:
		for i := range x {
			x[i] = 1e30
		}
		p, _ := mechanism.Dense32{}.Compress(nil, dec, x, nil)
		return p
	}
	p, _ := mechanism.Dense64{}.Compress(nil, dec, x, nil)
	return p
}

// finish closes and commits the open round and checks that the server's
// estimate moved by exactly (1/m) times the sum of the included payloads
// (or not at all if the round was discarded), and that the state is
// finite.
func (h *fuzzHarness) finish() {
	or := h.open
	h.open = nil
	h.c.mu.Lock()
	accepted := make(map[string][]float64, len(or.updates))
	for id, u := range or.updates {
		accepted[id] = slices.Clone(*u.vec)
	}
	h.c.mu.Unlock()
	before := h.est.Estimate()
	committed := h.c.Committed()
	if err := h.c.loop.finishRound(h.ctx, or); err != nil {
		h.t.Fatalf("finish round %d: %v", or.t, err)
	}
	after := h.est.Estimate()
	if err := mechanism.CheckFinite(after); err != nil {
		h.t.Fatalf("round %d: server estimate: %v", or.t, err)
	}
	if err := mechanism.CheckFinite(h.c.server.Model()); err != nil {
		h.t.Fatalf("round %d: model: %v", or.t, err)
	}
	want := append([]float64(nil), before...)
	if h.c.Committed() == committed+1 {
		rec, ok, err := h.c.store.Round(or.t)
		if err != nil || !ok {
			h.t.Fatalf("round %d committed without a record: %v", or.t, err)
		}
		sent := make(map[string][][]byte)
		for _, d := range h.devs {
			sent[d.id] = d.payloads[or.t]
		}
		for _, id := range rec.Included {
			// The vector the coordinator kept is the decoding of a
			// payload the device sent for this round.
			dec := accepted[id]
			ok := false
			for _, p := range sent[id] {
				v := make([]float64, h.dim)
				if mechanism.Decode(v, p) == nil && slices.Equal(v, dec) {
					ok = true
				}
			}
			if !ok {
				h.t.Fatalf("round %d: included update of %.8s is not the decoding of a payload it sent", or.t, id)
			}
			if n := mechanism.Norm(dec); !(n <= h.c.in.bound) {
				h.t.Fatalf("round %d: included payload of norm %v above the bound %v", or.t, n, h.c.in.bound)
			}
			for i, v := range dec {
				want[i] += v / float64(h.c.cfg.Session.Cohort)
			}
		}
	}
	for i := range want {
		if math.Abs(after[i]-want[i]) > 1e-9*(1+math.Abs(want[i])) {
			h.t.Fatalf("round %d: estimate[%d] = %v, want %v (the aggregate is not exactly the included updates)", or.t, i, after[i], want[i])
		}
	}
}

// checkDecisions: every "included" a device heard is in the round's
// record, and every "excluded" it heard after it last sent an update for
// that round is not in the record (an answer about a round the device had
// not yet sent, which a real device never asks, is not checked).
func (h *fuzzHarness) checkDecisions() {
	for _, d := range h.devs {
		for _, ws := range d.all {
			for _, dec := range ws.decisions() {
				rec, ok, err := h.c.store.Round(dec.T)
				if err != nil {
					h.t.Fatal(err)
				}
				switch {
				case dec.State == wire.Included && (!ok || !rec.Includes(d.id)):
					h.t.Fatalf("device %.8s heard included for round %d, which does not include it", d.id, dec.T)
				case dec.State == wire.Excluded && ok && rec.Includes(d.id) && dec.Reason == "" && dec.stamp > d.sent[dec.T]:
					h.tracef("decision stamp %d, sent stamp %d, reason %q", dec.stamp, d.sent[dec.T], dec.Reason)
					h.t.Fatalf("device %.8s heard excluded for round %d, which includes it", d.id, dec.T)
				}
			}
		}
	}
}

// FuzzServer drives an in-memory coordinator (real store, the product's
// own "nc" server half, fake websockets) with a program of frames from
// several fake devices: valid and invalid updates (huge, non-finite,
// wrong dimension, garbage, for the wrong round), control frames,
// disconnects, reconnects with any pending round, registrations, and
// round starts and commits in any order. The coordinator must never
// panic or fail, every committed round must move the aggregate by exactly
// its included updates (all within the norm bound), and no device may hear
// a decision its round's record contradicts.
func FuzzServer(f *testing.F) {
	// Seeds: four devices join; rounds in which every device answers
	// honestly, or with one of the hostile payload kinds, with
	// disconnects, reconnects (pending round 1..3) and leaves mixed in.
	for variant := range 6 {
		var p []byte
		for range 4 {
			p = append(p, 7, 0)
		}
		for r := range 6 {
			p = append(p, 0, 0)
			for k := range 4 {
				kind := byte(0)
				if k == r%4 {
					kind = byte(variant)
				}
				p = append(p, 2, byte(k), kind)
				if kind == 0 {
					p = append(p, 10, 250, 3, 7, 200, 1, 64, 128)
				}
				if variant >= 4 && k == 1 {
					p = append(p, 6, byte(k), byte(r%3+1)) // reconnect with a pending round
				}
			}
			if variant == 5 {
				p = append(p, 4, 2, 1) // device 2 leaves
			}
			p = append(p, 1, 0)
		}
		f.Add(p)
	}
	f.Fuzz(runFuzzProgram)
}

func runFuzzProgram(t *testing.T, prog []byte) {
	{
		if len(prog) > 400 {
			prog = prog[:400]
		}
		sess := wire.SessionParams{Name: "fuzz", Dim: 8, DeadlineMillis: 60000, Algorithm: "nc", Model: "logreg",
			Features: 3, Classes: 2, M: 6, Cohort: 3, Rounds: 12, Batch: 1, Clip: 1, Eta: 0.5, Rho: 1, Compressor: "f64"}
		dir := t.TempDir()
		if shm, err := os.MkdirTemp("/dev/shm", "bflfuzz"); err == nil {
			dir = shm // memory-backed: a store per execution costs no disk sync
			defer os.RemoveAll(shm)
		}
		st, err := store.Open(filepath.Join(dir, "fuzz.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		st.NoSync() // durability is not under test here; speed is
		srv, err := optim.NewServer(sess, make([]float64, sess.Dim), nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(Config{Session: sess, JoinCode: "fuzz", Server: srv, Store: st, MinDevices: 1, Seed: 7,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h := &fuzzHarness{t: t, ctx: ctx, c: c, est: srv.(optim.Estimator), prog: prog, dim: sess.Dim}
		for {
			h.drain()
			op, ok := h.next()
			if !ok {
				break
			}
			k, _ := h.next()
			var d *fuzzDevice
			if len(h.devs) > 0 {
				d = h.devs[int(k)%len(h.devs)]
			}
			if d != nil {
				h.tracef("op %d dev %.8s (conn %v) committed %d open %v", op%9, d.id, d.cn != nil, c.Committed(), h.open != nil)
			} else {
				h.tracef("op %d", op%9)
			}
			switch op % 9 {
			case 0:
				if h.open == nil && c.Committed() < sess.Rounds {
					or, err := c.loop.beginRound(ctx, c.Committed()+1)
					if err != nil {
						t.Fatalf("begin round: %v", err)
					}
					h.open = or
				}
			case 1:
				if h.open != nil {
					h.finish()
				}
			case 2, 3:
				if d == nil {
					continue
				}
				kind, _ := h.next()
				r := c.Committed() + 1
				if kind&0x80 != 0 {
					r += int(kind>>4&3) - 1
				}
				if r < 1 {
					r = 1
				}
				payload := h.payload(kind)
				b, err := wire.EncodeUpdate(wire.UpdateFrame{T: r, Payload: payload})
				if err != nil {
					continue
				}
				if d.sent == nil {
					d.sent, d.payloads = map[int]int64{}, map[int][][]byte{}
				}
				d.payloads[r] = append(d.payloads[r], payload)
				d.sent[r] = h.seq.Add(1)
				h.tracef("  update round %d kind %d stamp %d", r, kind%6, d.sent[r])
				h.frame(d, websocket.MessageBinary, b)
			case 4:
				if d == nil {
					continue
				}
				kind, _ := h.next()
				var b []byte
				switch kind % 3 {
				case 0:
					b, _ = wire.EncodeControl(wire.Status{T: int(kind/3)%16 + 1})
				case 1:
					b, _ = wire.EncodeControl(wire.Leave{Reason: wire.LeaveDone})
				default:
					n, _ := h.next()
					b = make([]byte, int(n)%32)
					for i := range b {
						b[i], _ = h.next()
					}
				}
				h.frame(d, websocket.MessageText, b)
			case 5:
				if d != nil {
					h.disconnect(d)
				}
			case 6:
				if d == nil {
					continue
				}
				h.disconnect(d)
				p, _ := h.next()
				hello := wire.Hello{Version: wire.Version, JoinCode: "fuzz", DeviceID: d.id, Secret: d.secret, Pending: int(p) % 16}
				if p&0x80 != 0 {
					hello.Secret = "wrong"
				}
				h.connect(d, hello)
			case 7:
				if len(h.devs) < 6 {
					d := &fuzzDevice{}
					h.devs = append(h.devs, d)
					h.connect(d, wire.Hello{Version: wire.Version, JoinCode: "fuzz"})
				}
			}
		}
		if h.open != nil {
			h.finish()
		}
		h.drain()
		h.checkDecisions()
		if testing.Verbose() {
			recs, _ := st.Rounds(0, 100)
			n := 0
			for _, r := range recs {
				n += len(r.Included)
			}
			t.Logf("%d rounds committed, %d updates included, %d rejected", c.Committed(), n, c.front.Met.RejectedUpdates.Load())
		}
		for _, d := range h.devs {
			h.disconnect(d)
		}
	}
}
